"""Process plumbing for the embedded servers: state files, locks, detached start, health wait, stop.

Nothing here knows about Redis, MongoDB or llama.cpp; ``keel/runtime/servers.py`` describes each server
with a ``ServerSpec`` and this module keeps exactly one healthy instance per name under a data
directory, shared by every process that points at the same directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

LOOPBACK = "127.0.0.1"
PORT_PROBE_TIMEOUT_S = 1.0  # a listening socket accepts at once, busy or not
POLL_INTERVAL_S = 0.1  # how often we re-check while waiting; not a tunable threshold
LOG_TAIL_BYTES = 4000
PORT_ATTEMPTS = 3  # starts tried when another process takes the probed port first (see ensure_running)
# A server found healthy is probed again only after this long (its process is looked at every time):
# llama.cpp answers a probe only between generations, so probing before every model call made each
# call wait up to connect_timeout_s behind other users' answers.
HEALTH_RECHECK_S = 10.0


class ServerUnavailableError(RuntimeError):
    """A server Keel needs cannot be used; the message names the URL (or log) and the problem."""


class ServerStartError(ServerUnavailableError):
    """An embedded server could not be started or never became healthy."""


@dataclass(frozen=True)
class ServerSpec:
    """What it takes to run one embedded server.

    ``command(port)`` builds the argv; ``url(port)`` the address clients use; ``health(url)``
    returns None when healthy or a short reason when not (it must not hang). ``settings`` are
    the choices a running instance must match to be reused (model file, context size, binary).
    """

    name: str
    command: Callable[[int], list[str]]
    url: Callable[[int], str]
    health: Callable[[str], str | None]
    env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    before_start: Callable[[], None] | None = None  # clears leftovers of a crashed instance


@dataclass
class ServerState:
    """The run/<name>.json record of a started server."""

    name: str
    pid: int
    port: int
    url: str
    command: list[str]
    settings: dict[str, str]
    started_at: float
    start_ticks: int | None = None  # process start time from /proc, guards against pid reuse


class RunDirectory:
    """The state files, locks, ports and logs under ``<home>/run`` and ``<home>/logs``."""

    def __init__(self, home: Path):
        self.home = home
        self.run_dir = home / "run"
        self.log_dir = home / "logs"

    def state_path(self, name: str) -> Path:
        return self.run_dir / f"{name}.json"

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def read_state(self, name: str) -> ServerState | None:
        try:
            return ServerState(**json.loads(self.state_path(name).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def write_state(self, state: ServerState) -> None:
        path = self.state_path(state.name)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        tmp.replace(path)

    def remove_state(self, name: str) -> None:
        self.state_path(name).unlink(missing_ok=True)

    def preferred_port(self, name: str) -> int | None:
        """The port this server had last time, so its URL stays the same across restarts."""
        try:
            return int((self.run_dir / f"{name}.port").read_text())
        except (OSError, ValueError):
            return None

    def remember_port(self, name: str, port: int) -> None:
        (self.run_dir / f"{name}.port").write_text(str(port))

    @contextlib.contextmanager
    def lock(self, name: str, timeout_s: float) -> Iterator[None]:
        """An exclusive fcntl lock, so two processes never start the same server at once."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / f"{name}.lock", "a+") as handle:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise ServerStartError(
                            f"another process has held {handle.name} for over {timeout_s:.0f}s"
                        ) from None
                    time.sleep(POLL_INTERVAL_S)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --- processes -------------------------------------------------------------------------------


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return [raw[: raw.index(" ")], raw[raw.index("(") : raw.rindex(")") + 1], *raw[raw.rindex(")") + 2 :].split()]


def process_start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot): a recycled pid is told from the one recorded."""
    stat = _proc_stat(pid)
    return int(stat[21]) if stat and len(stat) > 21 else None


# Servers this process started: kept so that their exit is collected (no zombies, no warnings).
_children: dict[int, subprocess.Popen] = {}


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie."""
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        del _children[pid]


def accepts_connections(port: int, timeout_s: float = PORT_PROBE_TIMEOUT_S) -> bool:
    """Whether something listens on 127.0.0.1:port (a busy server still accepts; a dead one refuses)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def is_alive(state: ServerState) -> bool:
    """True when the recorded process still runs and is the one we started (not a reused pid)."""
    _reap(state.pid)
    try:
        os.kill(state.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = _proc_stat(state.pid)
    if stat is None:
        return True  # no /proc here: trust the pid
    if stat[2] == "Z":
        return False
    return state.start_ticks is None or process_start_ticks(state.pid) == state.start_ticks


def free_port(preferred: int | None = None) -> int:
    """The preferred port when it is free on the loopback, otherwise one the OS picks."""
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # Like the servers themselves: a port whose old connections linger in TIME_WAIT is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, candidate))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise ServerStartError("no free TCP port on 127.0.0.1")


def _port_taken(port: int) -> bool:
    """Whether 127.0.0.1:port is bound by someone (listening or not)."""
    return free_port(port) != port


def log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The end of a server's log, for the error that says why it did not start."""
    try:
        data = path.read_bytes()
    except OSError:
        return "(no log)"
    return data[-limit:].decode("utf-8", "replace").strip() or "(log is empty)"


def spawn(spec: ServerSpec, port: int, runs: RunDirectory) -> ServerState:
    """Start the server detached from this process (own session), output into its log file."""
    runs.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = runs.log_path(spec.name)
    if log_path.exists():
        log_path.replace(log_path.with_suffix(".log.1"))  # keep the previous run's log for diagnosis
    command = spec.command(port)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **spec.env},
            cwd=runs.home,
            start_new_session=True,
        )
    _children[process.pid] = process
    return ServerState(
        name=spec.name,
        pid=process.pid,
        port=port,
        url=spec.url(port),
        command=command,
        settings=dict(spec.settings),
        started_at=time.time(),
        start_ticks=process_start_ticks(process.pid),
    )


def wait_healthy(spec: ServerSpec, state: ServerState, runs: RunDirectory, timeout_s: float) -> None:
    """Block until the health check passes; fail early when the process dies."""
    deadline = time.monotonic() + timeout_s
    reason = "not checked yet"
    while time.monotonic() < deadline:
        if not is_alive(state):
            raise ServerStartError(
                f"embedded {spec.name} exited during start-up ({' '.join(state.command)}).\n"
                f"Last lines of {runs.log_path(spec.name)}:\n{log_tail(runs.log_path(spec.name))}"
            )
        reason = spec.health(state.url)
        if reason is None:
            return
        time.sleep(POLL_INTERVAL_S)
    raise ServerStartError(
        f"embedded {spec.name} at {state.url} was not healthy within {timeout_s:.0f}s ({reason}).\n"
        f"Last lines of {runs.log_path(spec.name)}:\n{log_tail(runs.log_path(spec.name))}"
    )


def terminate(state: ServerState, timeout_s: float) -> None:
    """SIGTERM (servers save and exit cleanly), then SIGKILL after the grace period."""
    if not is_alive(state):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            # We started it as a session leader: signal its whole group (children included).
            if os.getpgid(state.pid) == state.pid:
                os.killpg(state.pid, sig)
            else:
                os.kill(state.pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not is_alive(state):
                return
            time.sleep(POLL_INTERVAL_S)
    if is_alive(state):
        raise ServerStartError(f"could not stop {state.name} (pid {state.pid})")


_healthy_at: dict[tuple[str, int | None], float] = {}


def recently_healthy(url: str, pid: int | None = None) -> bool:
    """Was the server at ``url`` (the process ``pid``, for an embedded one) found healthy less than
    ``HEALTH_RECHECK_S`` ago, by this process?"""
    return time.monotonic() - _healthy_at.get((url, pid), float("-inf")) < HEALTH_RECHECK_S


def found_healthy(url: str, pid: int | None = None) -> None:
    """Note that the server answered now, so the next health check within the cache time is skipped."""
    _healthy_at[(url, pid)] = time.monotonic()


def ensure_running(spec: ServerSpec, runs: RunDirectory, start_timeout_s: float, stop_timeout_s: float) -> ServerState:
    """Reuse the recorded instance when alive, healthy and configured alike; otherwise start one."""
    with runs.lock(spec.name, timeout_s=start_timeout_s + stop_timeout_s):
        state = runs.read_state(spec.name)
        if state is not None:
            if is_alive(state) and state.settings == spec.settings:
                if recently_healthy(state.url, pid=state.pid) or spec.health(state.url) is None \
                        or accepts_connections(state.port):
                    # A health check can time out on a busy server (llama.cpp answers /v1/models only
                    # between generations): replacing it would cut another client's answer short.
                    found_healthy(state.url, pid=state.pid)
                    return state
            terminate(state, stop_timeout_s)  # stale, hung or configured differently
            runs.remove_state(spec.name)
        preferred = runs.preferred_port(spec.name)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            if spec.before_start is not None:
                spec.before_start()
            port = free_port(preferred)
            state = spawn(spec, port, runs)
            runs.write_state(state)
            try:
                wait_healthy(spec, state, runs, start_timeout_s)
            except BaseException as error:
                terminate(state, stop_timeout_s)
                runs.remove_state(spec.name)
                # free_port() only probes: another process can bind the port before the server
                # does, and the server then exits at once. Our server is stopped now, so a port
                # still taken is someone else's: start again on a port the OS picks.
                if isinstance(error, ServerStartError) and attempt < PORT_ATTEMPTS and _port_taken(port):
                    preferred = None
                    continue
                raise
            runs.remember_port(spec.name, port)
            return state
        raise AssertionError("unreachable: the last attempt returns or raises")


def stop_recorded(name: str, runs: RunDirectory, timeout_s: float) -> bool:
    """Stop the recorded instance of ``name``; True when one was running."""
    with runs.lock(name, timeout_s=timeout_s * 2):
        state = runs.read_state(name)
        if state is None:
            return False
        was_running = is_alive(state)
        terminate(state, timeout_s)
        runs.remove_state(name)
        return was_running
