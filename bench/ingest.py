"""Benchmark: the ingestion pipeline over ../shared/data/docs into real Redis Stack.

Prints pages/s and chunks/s of ``loaders.pipeline.ingest`` (load → split → embed → store), the
time split by stage, and the pipeline's embedding throughput against the named baseline
**raw sentence-transformers ``encode``** on exactly the same texts (same model, same batch size,
measured in this run after a warm-up); target ratio >= 0.8.
Uses the configured Redis (REDIS_URL) or the embedded Redis Stack, in a throw-away index.
Run: ``.venv/bin/python -m bench.ingest``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import uuid

from langchain_core.embeddings import Embeddings

TARGET_EMBEDDING_RATIO = 0.8


class TimedEmbeddings(Embeddings):
    """Wraps the pipeline's embeddings and records what was embedded and how long it took."""

    def __init__(self, inner: Embeddings):
        self.inner = inner
        self.batches: list[list[str]] = []
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.inner.embed_documents(texts)
        self.seconds += time.perf_counter() - started
        self.batches.append(list(texts))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    from bench.corpus import shared_data
    from graph.configuration import Configuration
    from loaders.pipeline import expand_paths, ingest
    from models.embeddings import embedding_model_path, get_embeddings
    from stores.connections import get_redis
    from stores.vector_store import RedisChunkStore

    hf_logging.set_verbosity_error()
    cfg = Configuration(index_name=f"bench_ingest_{uuid.uuid4().hex[:8]}")
    client = get_redis(cfg)
    timed = TimedEmbeddings(get_embeddings(cfg))
    timed.inner.embed_documents(["warm-up: the model is loaded before anything is timed"] * 8)
    raw_model = SentenceTransformer(embedding_model_path(cfg), device="cpu", local_files_only=True)
    raw_model.encode(["warm-up"] * 8, batch_size=cfg.embedding_batch_size)
    store = RedisChunkStore(client, timed, cfg)
    store.ensure_index()
    files = list(expand_paths([shared_data() / "docs"]))
    user = f"bench-{uuid.uuid4().hex[:8]}"
    try:
        report = ingest(files, store, cfg, user_id=user)
        pages = sum(doc["pages"] for doc in store.list_documents(user))
    finally:
        client.ft(cfg.index_name).dropindex(delete_documents=True)
        for key in client.scan_iter(f"{cfg.index_name}:*"):
            client.delete(key)

    texts = [text for batch in timed.batches for text in batch]
    # Replay: the pipeline's exact embedding calls and the raw baseline, alternated, best of 3,
    # so both see the same machine load (the in-run figure is printed too).
    replay, raw = [], []
    for _ in range(3):
        started = time.perf_counter()
        for batch in timed.batches:
            timed.inner.embed_documents(batch)
        replay.append(time.perf_counter() - started)
        started = time.perf_counter()
        raw_model.encode(texts, batch_size=cfg.embedding_batch_size, normalize_embeddings=True)
        raw.append(time.perf_counter() - started)
    raw_seconds = min(raw)

    other = report.seconds - timed.seconds
    print(f"corpus: {len(files)} files in ../shared/data/docs; {report.documents} ingested "
          f"({pages} pages), {len(report.errors)} rejected with a reason")
    print(f"pipeline: {report.seconds:.2f} s; {report.parents} parents, {report.children} children")
    print(f"  pages/s:  {pages / report.seconds:8.1f}")
    print(f"  chunks/s: {report.children / report.seconds:8.1f} (children, embedded and stored)")
    print(f"  time: embedding {timed.seconds:.2f} s ({timed.seconds / report.seconds:.0%}), "
          f"load + split + store {other:.2f} s ({other / report.seconds:.0%})")
    in_run_rate = len(texts) / timed.seconds
    pipeline_rate = len(texts) / min(replay)
    raw_rate = len(texts) / raw_seconds
    ratio = pipeline_rate / raw_rate
    print(f"\nembedding throughput on the same {len(texts)} texts (batch size {cfg.embedding_batch_size}):")
    print(f"  pipeline during the run:                          {in_run_rate:8.1f} texts/s")
    print(f"  pipeline, its {len(timed.batches)} embedding calls replayed (best of 3): {pipeline_rate:8.1f} texts/s")
    print(f"  raw sentence-transformers encode (baseline, best of 3): {raw_rate:8.1f} texts/s")
    print(f"  ratio (replayed pipeline / raw): {ratio:.2f} (target >= {TARGET_EMBEDDING_RATIO}); "
          f"in-run / raw: {in_run_rate / raw_rate:.2f}")
    for error in report.errors:
        print(f"  rejected {error['source'].rsplit('/', 1)[-1]}: {error['error']}")
    return 0 if report.documents else 1


if __name__ == "__main__":
    sys.exit(main())
