"""The HaluEval evaluation on the real parts: `keel eval halueval` as a subprocess, and the length-matched rows of
../shared/data with real embeddings; sentence-level grounding with fakes is in unit_tests/test_grounding.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keel.evals import halueval
from keel.core.configuration import Configuration
from tests.eval_files import write_halueval_rows


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.real
def test_keel_eval_halueval_cli_prints_one_json_object(tmp_path):
    path = write_halueval_rows(tmp_path / "halu.jsonl")
    completed = subprocess.run(
        [sys.executable, "-m", "keel.cli.main", "eval", "halueval", str(path), "--json", "--report", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout)
    assert set(result) == {"precision", "recall", "f1", "false_rejection_rate", "rows"}
    assert result["rows"] == 2 and result["f1"] == 1.0
    assert (tmp_path / "r" / "halueval.png").stat().st_size > 1000


@pytest.mark.shared_data
def test_halueval_length_matched_rows_meet_the_target(shared_data):
    from keel.models.embeddings import get_embeddings
    from keel.checks.semantic import semantic_for

    cfg = Configuration()
    rows = [r for r in halueval.load_rows(shared_data / "qa" / "halueval-qa-500.json") if r.length_matched]
    similarities = semantic_for(get_embeddings(cfg))
    result = halueval.evaluate(rows, cfg, similarities)
    assert result["rows"] == 88
    assert result["f1"] >= 0.80 and result["false_rejection_rate"] <= 0.05
