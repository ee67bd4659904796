"""What the ingestion pipeline reads from a folder, without a store; the pipeline end to end on real Redis Stack
and real embeddings is in integration_tests/test_ingest.py."""

from __future__ import annotations

from keel.loaders.pipeline import expand_paths


def test_folders_expand_recursively_sorted_without_hidden_files(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("z.txt", "a.md", "b/c.txt", ".hidden.txt", ".git/config.txt"):
        (tmp_path / name).write_text("x")
    assert [p.relative_to(tmp_path).as_posix() for p in expand_paths([tmp_path])] == ["a.md", "b/c.txt", "z.txt"]
