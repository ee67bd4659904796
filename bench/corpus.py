"""Real text for the benchmarks, read from ../shared/data (nothing here was written for Keel)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"../shared/data not found at {SHARED_DATA}; the benchmarks read its real documents")
    return SHARED_DATA


def document_texts() -> list[tuple[str, str]]:
    """(name, text) of every document of docs/ that Keel's loaders read, one text per document."""
    from keel.loaders import DocumentLoadError, loader_for
    from keel.loaders.pipeline import expand_paths

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    texts = []
    for path in expand_paths([shared_data() / "docs"]):
        try:
            pages = list(loader_for(path).lazy_load())
        except DocumentLoadError:
            continue
        text = "\n".join(p.page_content for p in pages if p.metadata["multimodal_type"] == "text")
        if text.strip():
            texts.append((path.name, text))
    return texts


def qa_texts() -> list[tuple[str, str]]:
    """(name, text) of the QA sets' passages: SQuAD 2.0 paragraphs and HaluEval knowledge."""
    qa = shared_data() / "qa"
    texts = []
    squad = json.loads((qa / "squad2-dev-normans-complexity.json").read_text())
    for article in squad["data"]:
        texts.append((article["title"], "\n\n".join(p["context"] for p in article["paragraphs"])))
    rows = [json.loads(line) for line in (qa / "halueval-qa-500.json").read_text().splitlines() if line.strip()]
    texts.append(("halueval-knowledge", "\n\n".join(row["knowledge"] for row in rows)))
    return texts


def real_text_corpus(min_bytes: int) -> tuple[list[list[tuple[str, str]]], int]:
    """All real texts, taken whole as many times as needed to add up to ``min_bytes`` of UTF-8:
    one list of (name, text) per copy, and the number of copies (1 when the set is large enough).

    The copies are kept apart so a benchmark can give each its own fresh splitter: a second copy
    must not profit from what a cache learned on the first (LangChain's splitter has no cache)."""
    base = document_texts() + qa_texts()
    size = sum(len(text.encode("utf-8")) for _, text in base)
    copies = max(1, -(-min_bytes // size))
    return [[(f"{name}#{i}" if copies > 1 else name, text) for name, text in base] for i in range(copies)], copies
