"""`keel eval squad2` on a tiny SQuAD 2.0 file the test writes, as a subprocess through the real graph and parts;
normalisation, metrics and sampling are in unit_tests/test_eval_squad2.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.eval_files import TINY_SQUAD

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.real
def test_keel_eval_squad2_cli_on_a_tiny_file(keel_home, redis_url, mongodb_uri, llm_endpoint, tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY_SQUAD))
    completed = subprocess.run(
        [sys.executable, "-m", "keel.cli.main", "eval", "squad2", str(path), "--json", "--report", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)
    assert set(result) == {"answerable_correct", "abstention_rate", "false_abstention_rate", "ungrounded_rate",
                           "leak_rate", "confidently_wrong_rate", "mean_latency_s", "mean_attempts", "questions"}
    assert result["questions"] == 3
    assert result["leak_rate"] == 0.0
    assert result["answerable_correct"] >= 0.5  # retrieval plus the extractive fallback carry these
    assert (tmp_path / "r" / "squad2.png").stat().st_size > 1000
    report = json.loads((tmp_path / "r" / "squad2.json").read_text())
    assert len(report["outcomes"]) == 3
