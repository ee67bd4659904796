"""`keel eval qa` once through the real graph and parts, as a subprocess on a tiny question set the test writes;
the file format, the scoring and the user's path with fakes are in unit_tests/test_eval_qa.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.eval_files import write_qa_set

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.real
def test_keel_eval_qa_cli_on_a_tiny_set(keel_home, redis_url, mongodb_uri, llm_endpoint, tmp_path):
    path = write_qa_set(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-m", "keel.cli.main", "eval", "qa", str(path), "--limit", "3", "--sample-seed", "1",
         "--json", "--report", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)
    assert result["questions"] == 3 and result["leak_rate"] == 0.0
    assert 0.0 <= result["confidently_wrong_rate"] <= 1.0
    report = json.loads((tmp_path / "r" / "qa.json").read_text())
    assert len(report["outcomes"]) == 3
    assert all(o["status"] != "error" for o in report["outcomes"]), report["outcomes"]
    assert sum(result["status_counts"].values()) == 3
    assert (tmp_path / "r" / "qa.png").stat().st_size > 1000
