"""What this process may use of the machine: CPUs granted by the scheduler and the container.

``os.cpu_count()`` counts the host's cores; a container limited to two of sixty-four would start
sixty-four workers and run them in turn. Worker pools size themselves with ``usable_cpus``.
"""

from __future__ import annotations

import math
import os
from functools import cache
from pathlib import Path

_CGROUP_V2_QUOTA = Path("/sys/fs/cgroup/cpu.max")  # "max 100000" or "200000 100000"
_CGROUP_V1_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
_CGROUP_V1_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def _cgroup_quota() -> float | None:
    """CPUs' worth of time the container's quota grants, or None when there is no quota."""
    try:
        quota, period = _CGROUP_V2_QUOTA.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int(_CGROUP_V1_QUOTA.read_text())
        return None if quota_us <= 0 else quota_us / int(_CGROUP_V1_PERIOD.read_text())
    except (OSError, ValueError):
        return None


@cache
def usable_cpus() -> int:
    """The CPUs this process may run on (affinity), capped by the container's CPU quota; at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cpus = min(cpus, math.ceil(quota))
    return max(1, cpus)
