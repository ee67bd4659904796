"""How much of the real-world corpus Keel ingests, and why each rejected file was rejected.

    .venv/bin/python -m bench.corpus_ingest [--json]

Every file under ../shared/data/docs goes through ``keel ingest``'s pipeline (keel.loaders.pipeline
.ingest: the loader chosen by type, OCR, splitting into parents and children, the rule that a
document without text or pictures is not stored), with the default configuration. Only the last
step differs: the parents and children are kept in memory instead of being embedded and written to
Redis, so the count does not depend on a running store. Prints the files ingested out of the total,
each rejection with its reason, each warning (what a stored file lost), and the slowest files.

OCR makes this take about a minute on 2 cores: run it once, not in a loop.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from bench.corpus import shared_data


class InMemoryStore:
    """Takes what the pipeline would store, as ``RedisChunkStore.add_document`` does."""

    def __init__(self):
        self.children = 0

    def add_document(self, parents, children, batch_size=None):
        self.children += len(children)


def run() -> dict:
    from keel.core.configuration import Configuration
    from keel.loaders.pipeline import expand_paths, ingest

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    docs = shared_data() / "docs"
    files = list(expand_paths([docs]))
    cfg = Configuration()
    seconds: dict[str, float] = {}
    rejected: dict[str, str] = {}
    warnings: list[tuple[str, str]] = []
    stored = 0
    for path in files:  # one call per file, as a user's folder would be, timed each
        started = time.perf_counter()
        report = ingest([path], InMemoryStore(), cfg, user_id="corpus")
        name = path.relative_to(docs).as_posix()
        seconds[name] = round(time.perf_counter() - started, 2)
        stored += report.documents
        rejected.update({name: error["error"] for error in report.errors})
        warnings += [(name, warning["warning"]) for warning in report.warnings]
    return {
        "files": len(files),
        "ingested": stored,
        "rejected": rejected,
        "warnings": [{"source": name, "warning": text} for name, text in warnings],
        "seconds": round(sum(seconds.values()), 1),
        "slowest": dict(sorted(seconds.items(), key=lambda item: -item[1])[:5]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = run()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"ingested {result['ingested']} of {result['files']} files in {result['seconds']} s")
    for name, reason in result["rejected"].items():
        print(f"  rejected {name}: {reason}")
    for warning in result["warnings"]:
        print(f"  warning  {warning['source']}: {warning['warning']}")
    print("slowest: " + ", ".join(f"{Path(name).name} {s} s" for name, s in result["slowest"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
