"""Where ``keel serve`` may listen: anywhere with API keys on, only on loopback without them."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (localhost, 127.0.0.0/8, ::1); a name other than
    localhost may resolve anywhere, so it is not."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def check_bind(host: str, auth: bool) -> None:
    """Refuse to expose an unauthenticated server beyond this machine."""
    if not auth and not is_loopback(host):
        raise ValueError(f"refusing to listen on {host} without authentication: --no-auth is for loopback "
                         "(127.0.0.1, ::1, localhost) only; add users with `keel users add NAME` instead")
