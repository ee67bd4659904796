"""The warm CLI service's address and messages, with the standard library alone: the ``keel``
entry point (keel/cli/entry.py) uses them before it imports anything else of Keel's, the command
(keel/cli/warm_client.py) and the service (keel/cli/warm_service.py) after.

Which service may answer a command is decided by its *key* (``service_key``): a hash of KEEL_HOME,
every variable Keel's settings read (and the library ones that change models or threads), the
Python interpreter, and Keel's source files. A change to any of them, a new Keel version included,
gets another service. Its socket lives under KEEL_HOME/run, named by the key. Messages are one JSON
object per line, at most ``MAX_MESSAGE_BYTES``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
from functools import cache
from pathlib import Path

from keel.runtime.home import home_folder

HOME_VARIABLE = "KEEL_HOME"
# Settings read from variables not named KEEL_* (tests/unit_tests/test_warm_service.py keeps the list
# equal to the configuration's).
OTHER_SETTING_VARIABLES = frozenset({"MONGODB_PASSWORD", "MONGODB_URI", "MONGODB_USERNAME", "REDIS_PASSWORD",
                                     "REDIS_URL", "REDIS_USERNAME"})
# Variables outside Keel's settings that change what a process loads or how it runs.
LIBRARY_PREFIXES = ("HF_", "TRANSFORMERS_", "TOKENIZERS_", "OMP_", "MKL_", "ORT_", "CUDA_", "LD_")
# Variables the command sets itself for its logs and progress bars (keel/cli/logs.py): they change
# what is printed on stderr, never an answer, and the service prints no logs to a command.
OUTPUT_ONLY_VARIABLES = frozenset({"TRANSFORMERS_VERBOSITY", "TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_PROGRESS_BARS"})
NAME_PREFIX = "cli-"
MAX_SOCKET_PATH = 107  # bytes of sun_path on Linux, its terminating NUL excluded
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a reply carries the answer, its sources and their markdown
_KEEL_SOURCE = Path(__file__).resolve().parents[1]
_DESIGN_FOLDERS = ("graph", "nodes", "chains", "retrievers", "loaders")
_PEER_CREDENTIALS = struct.Struct("3i")  # pid, uid, gid of the process at the other end of a socket
STOPPED_MESSAGE = "the warm CLI service stopped before it replied; see its log under KEEL_HOME/logs"


def environment_value(name: str) -> str | None:
    """A variable as Keel's settings read it: stripped, None when unset or blank."""
    return os.environ.get(name, "").strip() or None


def home() -> Path:
    """The KEEL_HOME this process uses: where the warm service's socket lives."""
    return home_folder(environment_value(HOME_VARIABLE))


def service_key() -> str:
    """Names the one service that may answer for this process: a hash of KEEL_HOME, every variable
    Keel's settings read (and the library ones that change models or threads), the Python
    interpreter, and Keel's source files. A change to any of them, a new Keel version included,
    gets another service."""
    environment = {name: value for name, value in os.environ.items()
                   if (name.startswith(("KEEL_", *LIBRARY_PREFIXES)) or name in OTHER_SETTING_VARIABLES)
                   and name not in OUTPUT_ONLY_VARIABLES and name != HOME_VARIABLE}  # the folder it names counts
    parts = {"home": str(home()), "python": sys.executable, "code": code_version(), "env": environment}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


@cache  # once per process: the key and the service's record both name it
def code_version() -> str:
    """Every Keel source file's path, size and modification time: an edit or an upgrade is another key."""
    roots = [_KEEL_SOURCE] + [_KEEL_SOURCE.parent / name for name in _DESIGN_FOLDERS]
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def socket_path(key: str) -> Path:
    """The socket of the warm service with ``key`` (one per setup, see ``service_key``)."""
    return home() / "run" / f"{NAME_PREFIX}{key}.sock"


def read_message(stream) -> dict | None:
    """One newline-terminated JSON object from ``stream``; None at its end. Refused past the size limit."""
    line = stream.readline(MAX_MESSAGE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_MESSAGE_BYTES or not line.endswith(b"\n"):
        raise ValueError("message too long or cut short")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def same_user(connection: socket.socket) -> bool:
    """Whether the process at the other end of ``connection`` runs as this process's OS user."""
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size)
    _, uid, _ = _PEER_CREDENTIALS.unpack(raw)
    return uid == os.getuid()


def connect(path: Path, timeout_s: float | None) -> socket.socket:
    """A connection to the service at ``path``; PermissionError when another OS user listens there
    (a question is never sent to a socket someone else put in a shared KEEL_HOME)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout_s)
    try:
        connection.connect(str(path))
        if not same_user(connection):
            raise PermissionError(f"{path} is served by another OS user")
    except OSError:
        connection.close()
        raise
    return connection


def send_message(connection: socket.socket, message: dict) -> dict | None:
    """Send ``message``; the reply, or None when the service closed the connection without one."""
    connection.sendall(json.dumps(message).encode() + b"\n")
    with connection.makefile("rb") as replies:
        return read_message(replies)
