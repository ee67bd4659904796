"""Worker pools size themselves by the CPUs the container grants, not the host's cores."""

from __future__ import annotations

import os

import pytest

from keel.core import machine


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A host of 64 cores whose cgroup files are written by the test."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(machine, "_CGROUP_V2_QUOTA", tmp_path / "cpu.max")
    monkeypatch.setattr(machine, "_CGROUP_V1_QUOTA", tmp_path / "cfs_quota_us")
    monkeypatch.setattr(machine, "_CGROUP_V1_PERIOD", tmp_path / "cfs_period_us")
    machine.usable_cpus.cache_clear()
    yield tmp_path
    machine.usable_cpus.cache_clear()


def test_a_cgroup_v2_quota_caps_the_cores(host):
    (host / "cpu.max").write_text("150000 100000\n")  # one and a half CPUs' worth of time
    assert machine.usable_cpus() == 2


def test_no_quota_leaves_the_cores_the_process_may_run_on(host):
    (host / "cpu.max").write_text("max 100000\n")
    assert machine.usable_cpus() == 64


def test_a_cgroup_v1_quota_is_read_when_there_is_no_v2_file(host):
    (host / "cfs_quota_us").write_text("200000\n")
    (host / "cfs_period_us").write_text("100000\n")
    assert machine.usable_cpus() == 2
    machine.usable_cpus.cache_clear()
    (host / "cfs_quota_us").write_text("-1\n")  # unlimited
    assert machine.usable_cpus() == 64
