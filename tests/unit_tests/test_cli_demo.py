"""`keel demo`'s exit code: 0 for an answer from the samples, 1 when the sample question got none,
never 2 (the usage error a script tells apart from a run that did not answer)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from keel.cli import demo


class _Graph:
    def __init__(self, status: str):
        self.status = status

    def invoke(self, inputs, config):
        return {"answer": "Within 90 days.", "status": self.status, "route": "single_doc", "sources": [],
                "quality": 1.0}


@pytest.mark.parametrize(("status", "code"), [("success", 0), ("insufficient_context", 1), ("error", 1)])
def test_the_demo_exits_0_when_answered_and_1_when_not(monkeypatch, capsys, status, code):
    monkeypatch.setattr(demo, "ingest_paths", lambda *a, **k: SimpleNamespace(documents=3, errors=[]))
    monkeypatch.setattr(demo, "graph_with_history", lambda cfg: _Graph(status))
    assert demo.run_demo(SimpleNamespace(json=True)) == code
    assert f'"status": "{status}"' in capsys.readouterr().out
