"""Benchmark: the embedding runtimes on the same chunks, speed and retrieval quality in one run.

    .venv/bin/python -m bench.embedding [--repeat 3]

The chunks are what `keel ingest` makes of the QA sets' paragraphs in ../shared/data/qa (SQuAD 2.0
dev articles, HaluEval knowledge; each paragraph a page, split by Keel's parent-child splitter with
the default settings, children with their n-gram hints: the texts the store embeds). Each runtime
of ``embedding_runtime`` embeds all of them and every answerable question:

* speed: texts/s on the chunks (best of ``--repeat``), against the named baseline **torch**
  (sentence-transformers through HuggingFaceEmbeddings, today's path) measured in the same run;
* quality: the question's children ranked by cosine, their paragraphs in first-seen order, and
  recall@5 and MRR of the question's own paragraph, against torch's.

Targets for the default runtime: >= 3x torch's texts/s; recall@5 and MRR within 1% of torch's
(relative). Prints PASS/FAIL per target and exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from dataclasses import replace

import numpy as np

from bench.corpus import shared_data

SPEED_TARGET = 3.0
QUALITY_TOLERANCE = 0.01  # relative, of torch's recall@5 and MRR
RUNTIMES = ("torch", "onnx", "onnx_int8")
SQUAD_FILE = "qa/squad2-dev-normans-complexity.json"
HALUEVAL_FILE = "qa/halueval-qa-500.json"


def qa_sets() -> dict[str, list[tuple[str, list[str]]]]:
    """Each QA set as (paragraph, its answerable questions) pairs: SQuAD 2.0's dev articles and
    HaluEval's knowledge passages."""
    squad = json.loads((shared_data() / SQUAD_FILE).read_text(encoding="utf-8"))["data"]
    halueval = [json.loads(line) for line in (shared_data() / HALUEVAL_FILE).read_text(encoding="utf-8").splitlines()
                if line.strip()]  # JSON lines
    return {
        "squad2-dev": [(p["context"], [qa["question"] for qa in p["qas"] if not qa.get("is_impossible")])
                       for article in squad for p in article["paragraphs"]],
        "halueval": [(row["knowledge"], [row["question"]]) for row in halueval],
    }


def chunks_of(paragraphs: list[tuple[str, list[str]]], cfg) -> tuple[list[str], list[int], list[tuple[str, int]]]:
    """(child texts as the store embeds them, each child's paragraph number, (question, its paragraph
    number)): each paragraph a page of one document, split as `keel ingest` splits."""
    from langchain_core.documents import Document

    from keel.splitters.parent_child import ParentChildSplitter

    pages = [Document(page_content=text, metadata={"user_id": "bench", "doc_id": "bench", "source": "bench",
                                                   "page": number, "conversation_id": None})
             for number, (text, _) in enumerate(paragraphs)]
    _, children = ParentChildSplitter.from_config(cfg).split_documents(pages)
    texts = [child.metadata.get("embedding_text") or child.page_content for child in children]
    owners = [int(child.metadata["page"]) for child in children]
    questions = [(q, number) for number, (_, asked) in enumerate(paragraphs) for q in asked]
    return texts, owners, questions


def ranks(chunk_vectors: np.ndarray, owners: list[int], question_vectors: np.ndarray, gold: list[int]) -> list[int]:
    """1-based rank of each question's gold paragraph (0 when absent) in paragraph order of first hit."""
    owner_array = np.asarray(owners)
    found = []
    for vector, paragraph in zip(question_vectors, gold):
        order = owner_array[np.argsort(-(chunk_vectors @ vector), kind="stable")]
        _, first = np.unique(order, return_index=True)
        paragraph_order = order[np.sort(first)]
        hits = np.flatnonzero(paragraph_order == paragraph)
        found.append(int(hits[0]) + 1 if hits.size else 0)
    return found


def measure(runtime: str, cfg, sets: dict, repeat: int) -> dict:
    """Texts/s over all sets' chunks (best of ``repeat``), and recall@5 / MRR per set."""
    from keel.models.embeddings import get_embeddings

    embeddings = get_embeddings(replace(cfg, embedding_runtime=runtime))
    all_texts = [text for texts, _, _ in sets.values() for text in texts]
    embeddings.embed_documents(all_texts[:32])  # loaded and warm before anything is timed
    best, vectors = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        vectors = np.asarray(embeddings.embed_documents(all_texts), dtype=np.float32)
        best = min(best, time.perf_counter() - started)
    result: dict = {"texts_per_s": len(all_texts) / best, "seconds": best}
    offset = 0
    for name, (texts, owners, questions) in sets.items():
        question_vectors = np.asarray(embeddings.embed_documents([q for q, _ in questions]), dtype=np.float32)
        found = ranks(vectors[offset:offset + len(texts)], owners, question_vectors, [p for _, p in questions])
        offset += len(texts)
        result[name] = {"recall@5": sum(0 < r <= 5 for r in found) / len(found),
                        "mrr": sum(1 / r for r in found if r) / len(found)}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per runtime, best kept (default 3)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("transformers").setLevel(logging.ERROR)

    from keel.core.configuration import Configuration

    cfg = Configuration()
    default = cfg.embedding_runtime
    sets = {name: chunks_of(paragraphs, cfg) for name, paragraphs in qa_sets().items()}
    results = {name: measure(name, cfg, sets, max(1, args.repeat)) for name in RUNTIMES}
    base, ours = results["torch"], results[default]
    checks = {f"{default} texts/s >= {SPEED_TARGET}x torch": ours["texts_per_s"] / base["texts_per_s"] >= SPEED_TARGET}
    for name in sets:
        for metric in ("recall@5", "mrr"):
            checks[f"{default} {name} {metric} within 1% of torch"] = \
                ours[name][metric] >= base[name][metric] * (1 - QUALITY_TOLERANCE)
    if args.json:
        print(json.dumps({"chunks": {n: len(t) for n, (t, _, _) in sets.items()},
                          "questions": {n: len(q) for n, (_, _, q) in sets.items()}, "default": default,
                          "runtimes": results, "checks": checks}, indent=2))
    else:
        counts = ", ".join(f"{n}: {len(t)} chunks, {len(q)} questions" for n, (t, _, q) in sets.items())
        print(f"chunks as `keel ingest` splits them ({counts}); best of {args.repeat}")
        print(f"{'runtime':10} {'texts/s':>9} {'x torch':>8}" + "".join(f" {n + ' R@5':>15} {'MRR':>7}" for n in sets))
        for name, row in results.items():
            print(f"{name:10} {row['texts_per_s']:9.1f} {row['texts_per_s'] / base['texts_per_s']:7.2f}x"
                  + "".join(f" {row[n]['recall@5']:15.4f} {row[n]['mrr']:7.4f}" for n in sets))
        for check, passed in checks.items():
            print(f"{'PASS' if passed else 'FAIL'}  {check}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
