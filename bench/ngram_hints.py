"""Benchmark: does n-gram hint injection move the gold chunk up in retrieval?

Real documents and real questions: the two Wikipedia articles of ../shared/data/qa (SQuAD 2.0 dev,
"Normans" and "Computational complexity theory") are each one document, chunked exactly as Keel
ingests (parent-child, children of cfg.child_chunk_tokens). Every answerable question's gold chunks
are the children that contain its answer span. Children are embedded with the real embedding model
twice, without and with hints (the same chunks; only the embedded text differs), and each
question's gold rank (best-ranked gold child among all children, by cosine) is compared.
The hints are meant to lift gold chunks from ranks 10-12 to rank 1; this prints what happens
here, whatever it is.
Run: ``.venv/bin/python -m bench.ngram_hints [--plot hints.png]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import numpy as np


def _articles():
    from bench.corpus import shared_data

    squad = json.loads((shared_data() / "qa" / "squad2-dev-normans-complexity.json").read_text())
    for article in squad["data"]:
        text, questions = "", []
        for paragraph in article["paragraphs"]:
            base = len(text)
            text += paragraph["context"] + "\n\n"
            for qa in paragraph["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                answer = qa["answers"][0]
                questions.append((qa["question"], base + answer["answer_start"], base + answer["answer_start"] + len(answer["text"])))
        yield article["title"], text, questions


def _ranks(query_vectors: np.ndarray, child_vectors: np.ndarray, gold: list[set[int]]) -> list[int]:
    scores = query_vectors @ child_vectors.T
    ranks = []
    for row, gold_ids in zip(scores, gold):
        order = np.argsort(-row, kind="stable")
        position = {child: rank for rank, child in enumerate(order, start=1)}
        ranks.append(min(position[i] for i in gold_ids))
    return ranks


def _summary(ranks: list[int]) -> str:
    n = len(ranks)
    return (f"mean rank {statistics.mean(ranks):6.2f}  median {statistics.median(ranks):4.1f}  "
            f"MRR {sum(1 / r for r in ranks) / n:.3f}  R@1 {sum(r == 1 for r in ranks) / n:.3f}  "
            f"R@5 {sum(r <= 5 for r in ranks) / n:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plot", default=None, help="write a PNG of ranks without vs with hints")
    args = parser.parse_args(argv)

    from langchain_core.documents import Document

    from keel.core.configuration import Configuration
    from keel.loaders.base import doc_id_for_bytes, inheritable_metadata
    from keel.models.embeddings import get_embeddings
    from keel.splitters import NgramImportance, ParentChildSplitter
    from keel.stores.chunk_store import EMBEDDING_TEXT_KEY

    cfg = Configuration()
    embeddings = get_embeddings(cfg)
    variants = {
        "no hints": None,
        f"hints: tags + repeat x{cfg.ngram_hint_repeats - 1} (default)": NgramImportance.from_config(cfg),
        "hints: tags only": NgramImportance(cfg.ngram_max_important, cfg.ngram_min_count, cfg.ngram_font_scaling,
                                            cfg.ngram_heading_weight, hint_repeats=1),
        "hints: 30 n-grams per document": NgramImportance(30, cfg.ngram_min_count, hint_repeats=cfg.ngram_hint_repeats),
    }
    questions, gold, texts_by_variant, hinted_share = [], [], {name: [] for name in variants}, {}
    for title, text, article_questions in _articles():
        meta = inheritable_metadata(user_id="bench", conversation_id=None, source=title,
                                    doc_id=doc_id_for_bytes(text.encode()), page=1, total_pages=1)
        page = Document(page_content=text, metadata=meta)
        offset = len(texts_by_variant["no hints"])
        for name, importance in variants.items():
            splitter = ParentChildSplitter(importance=importance, cfg=cfg)
            _, children = splitter.split_documents([page])
            texts_by_variant[name].extend(c.metadata.get(EMBEDDING_TEXT_KEY) or c.page_content for c in children)
            hinted_share[name] = hinted_share.get(name, 0) + sum(EMBEDDING_TEXT_KEY in c.metadata for c in children)
            if importance is not None and name.endswith("(default)"):
                print(f"{title}: important n-grams: {', '.join(i.text for i in importance.find([page]))}")
        spans = [(c.metadata["start_index"], c.metadata["start_index"] + len(c.page_content)) for c in children]
        for question, start, end in article_questions:
            ids = {offset + i for i, (a, b) in enumerate(spans) if a <= start and end <= b}
            if ids:
                questions.append(question)
                gold.append(ids)
    n_children = len(texts_by_variant["no hints"])
    print(f"\n{len(questions)} answerable SQuAD questions, {n_children} child chunks "
          f"({cfg.child_chunk_tokens} tokens, overlap {cfg.child_chunk_overlap}), 2 real documents")
    query_vectors = np.asarray(embeddings.embed_documents(questions), dtype=np.float32)
    results = {}
    for name, texts in texts_by_variant.items():
        vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
        results[name] = _ranks(query_vectors, vectors, gold)
    base = results["no hints"]
    print()
    for name, ranks in results.items():
        print(f"{name:34s} {_summary(ranks)}  ({hinted_share[name]}/{n_children} chunks hinted)")
    for name, ranks in list(results.items())[1:]:
        better = sum(r < b for r, b in zip(ranks, base))
        worse = sum(r > b for r, b in zip(ranks, base))
        seed_case = [(b, r) for b, r in zip(base, ranks) if 10 <= b <= 12]
        print(f"\n{name}: vs no hints, {better} questions ranked better, {worse} worse, "
              f"{len(base) - better - worse} unchanged; mean-rank ratio {statistics.mean(ranks) / statistics.mean(base):.3f}")
        print(f"  gold at rank 10-12 without hints ({len(seed_case)} questions) -> with hints: "
              f"{sorted(r for _, r in seed_case)}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        default = next(name for name in results if name.endswith("(default)"))
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.scatter(base, results[default], s=10, alpha=0.5)
        top = max(max(base), max(results[default]))
        ax.plot([1, top], [1, top], color="grey", linewidth=1)
        ax.set(xscale="log", yscale="log", xlabel="gold rank without hints", ylabel="gold rank with hints",
               title="n-gram hints on SQuAD (below the line = better)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
