"""A server found healthy is not probed again before every model call: llama.cpp answers a probe only
between generations, so each call waited behind other users' answers. Its process is still looked at
every time, so a dead server is replaced at once."""

from __future__ import annotations

import os

import pytest

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime import processes, servers
from keel.runtime.processes import HEALTH_RECHECK_S, RunDirectory, ServerSpec, ServerState


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(processes.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(processes, "_healthy_at", {})
    return now


def test_a_healthy_configured_server_is_probed_again_only_after_the_recheck_interval(monkeypatch, clock):
    probes = []
    monkeypatch.setattr(servers, "_health_check", lambda name, cfg: lambda url: probes.append(url))
    cfg = RuntimeSettings()
    for _ in range(3):
        assert servers._check_configured(servers.LLM, "http://models.internal:8000", cfg) == "http://models.internal:8000"
    assert len(probes) == 1
    clock[0] += HEALTH_RECHECK_S + 1
    servers._check_configured(servers.LLM, "http://models.internal:8000", cfg)
    assert len(probes) == 2


def test_an_unhealthy_configured_server_is_refused_every_time(monkeypatch, clock):
    monkeypatch.setattr(servers, "_health_check", lambda name, cfg: lambda url: "unreachable: refused")
    for _ in range(2):
        with pytest.raises(servers.ServerUnavailableError, match="unreachable"):
            servers._check_configured(servers.LLM, "http://models.internal:8000", RuntimeSettings())


def _recorded(runs: RunDirectory, pid: int) -> ServerState:
    state = ServerState(name="llm", pid=pid, port=1, url="http://127.0.0.1:1", command=["llama"], settings={},
                        started_at=0.0)
    runs.write_state(state)
    return state


def test_an_embedded_server_is_probed_once_while_its_process_lives(tmp_path, clock, monkeypatch):
    runs, probes = RunDirectory(tmp_path), []
    runs.run_dir.mkdir(parents=True)
    monkeypatch.setattr(processes, "_proc_stat", lambda pid: None)  # the recorded pid is this test's own
    state = _recorded(runs, os.getpid())
    spec = ServerSpec("llm", command=lambda port: ["llama"], url=lambda port: f"http://127.0.0.1:{port}",
                      health=lambda url: probes.append(url))
    for _ in range(3):
        assert processes.ensure_running(spec, runs, 1.0, 1.0).pid == state.pid
    assert len(probes) == 1
    # Another process at the same address (a restart) is probed, not taken on the old one's word.
    monkeypatch.setattr(processes, "is_alive", lambda recorded: True)
    _recorded(runs, os.getppid())
    processes.ensure_running(spec, runs, 1.0, 1.0)
    assert len(probes) == 2
