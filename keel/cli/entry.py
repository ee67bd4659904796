"""The ``keel`` command's entry point: a ``keel ask`` goes straight to the warm CLI service when one
is running for this environment, before anything of Keel's is imported.

Importing Keel's configuration and the command's own modules takes longer than a warm answer
(~0.1 s against ~0.2 s), so this module uses the standard library alone: it finds the service's
socket from the environment (keel/cli/warm_protocol.py), hands it the command line, and prints what the
service printed for it: the same output, on the same streams, with the same exit code. The
service parses the command line with the command's own parser, so an option means the same thing
either way. Whatever it cannot do, ``keel.cli.main`` does: no service running (it starts one), the
service off (``KEEL_CLI_SERVICE``), ``-v`` (the logs are the command's own), ``--docs``, any other
command.

Ctrl-C closes the connection, and the service stops the answer at the model's next step.
"""

from __future__ import annotations

import os
import sys

from keel.cli.warm_protocol import (
    MAX_SOCKET_PATH,
    STOPPED_MESSAGE,
    connect,
    environment_value,
    send_message,
    service_key,
    socket_path,
)

SERVICE_VARIABLE = "KEEL_CLI_SERVICE"
EXIT_INTERRUPTED = 130


def through_service(argv: list[str]) -> int | None:
    """Run ``keel ARGV`` in the warm service: its exit code, or None when the full command must run it."""
    if not argv or argv[0] != "ask" or (environment_value(SERVICE_VARIABLE) or "auto") != "auto":
        return None
    path = socket_path(service_key())
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    try:
        connection = connect(path, timeout_s=None)
    except OSError:
        return None  # no service yet: the full command starts one
    with connection:
        try:
            reply = send_message(connection, {"op": "command", "argv": argv})
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED  # the closed connection stops the answer in the service
        except (OSError, ValueError):
            reply = None
    if reply is None:
        print(f"keel: error: {STOPPED_MESSAGE}", file=sys.stderr)
        return 1
    if reply.get("fallback") or not reply.get("ok"):
        return None
    sys.stdout.write(reply.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(reply.get("stderr", ""))
    return int(reply.get("exit", 1))


def main(argv: list[str] | None = None) -> int:
    """The `keel` command: answered by the warm service when one runs for this setup, else here."""
    argv = list(sys.argv[1:] if argv is None else argv)
    code = through_service(argv)
    if code is not None:
        return code
    from keel.cli.main import main as full_command

    return full_command(argv)


if __name__ == "__main__":
    sys.exit(main())
