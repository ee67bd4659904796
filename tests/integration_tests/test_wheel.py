"""The wheel an application installs holds one top-level package, ``keel``, with every module."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.real
def test_the_wheel_has_only_keel_at_the_top_with_the_card_folders_inside(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(tmp_path.glob("keel-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"keel", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for module in ("keel/graph/chat_graph.py", "keel/nodes/guardrails.py", "keel/chains/prompts.py",
                   "keel/retrievers/fanout.py", "keel/loaders/pipeline.py", "keel/core/configuration.py",
                   "keel/server/app.py", "keel/cli/main.py", "keel/evals/helpdesk/questions.json",
                   "keel/server/web/index.html", "keel/server/web/app.js", "keel/server/web/style.css"):
        assert module in names, module
