"""The library passes ruff's checks as pyproject.toml configures them (pyflakes, pycodestyle,
isort, pyupgrade, bugbear): a new unused import, a loop variable caught late by a closure or a
``zip`` that silently drops items fails the suite, not a reviewer's eye."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("keel", "graph", "nodes", "chains", "retrievers", "loaders")


def _ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")
    found = str(beside) if beside.exists() else shutil.which("ruff")
    assert found, "ruff is not installed: it is in the [test] extra (scripts/setup.sh installs it)"
    return found


def test_the_library_passes_ruff():
    done = subprocess.run([_ruff(), "check", "--no-cache", "--output-format", "concise", *LIBRARY],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_reads_the_projects_rules():
    """The check above means something only with the configured rule set and line length."""
    done = subprocess.run([_ruff(), "check", "--show-settings", "keel/__init__.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "line_length = 100" in done.stdout
    for rule in ("unused-import", "unsorted-imports", "zip-without-explicit-strict", "undocumented-public-function"):
        assert rule in done.stdout
