"""`keel ingest` tells what a stored file lost (warnings), in text and in --json, beside what it
refused (errors); the exit status stays 0 when something was stored."""

from __future__ import annotations

import json

import keel.cli.main as cli
import keel.cli.running as running
from keel.loaders.pipeline import IngestReport


def _report() -> IngestReport:
    return IngestReport(
        documents=1, parents=1, children=2, seconds=0.5, doc_ids=["d1"],
        errors=[{"source": "locked.pdf", "error": "encrypted PDF: a password is required"}],
        warnings=[{"source": "scan.pdf", "warning": "page 2: low OCR confidence 41 (below 60) on picture 1: "
                   "its text may be wrong"}],
    )


def test_keel_ingest_prints_warnings_after_the_skipped_files(monkeypatch, capsys):
    monkeypatch.setattr(running, "ingest_paths", lambda *args, **kwargs: _report())
    assert cli.main(["ingest", "scan.pdf", "locked.pdf"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "  skipped locked.pdf: encrypted PDF: a password is required",
        "  warning scan.pdf: page 2: low OCR confidence 41 (below 60) on picture 1: its text may be wrong",
    ]


def test_keel_ingest_json_carries_the_warnings(monkeypatch, capsys):
    monkeypatch.setattr(running, "ingest_paths", lambda *args, **kwargs: _report())
    assert cli.main(["ingest", "scan.pdf", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["warnings"] == _report().warnings and summary["errors"] == _report().errors
