"""Benchmark: the ingestion pipeline over ../shared/data/docs into real Redis Stack.

Prints pages/s and chunks/s of ``keel.loaders.pipeline.ingest`` (load → split → embed → store), the
time split by stage, and the checked figure: the pipeline's embedding throughput *during the
ingest run* (texts / seconds inside its embed_documents calls) against the named baseline **raw
sentence-transformers ``encode``** on exactly the same chunk texts (same model, same batch size),
timed right after each ingest round in the same process. Target ratio >= 0.8; prints PASS/FAIL
and exits 1 on a miss (or when nothing was ingested). ``--rounds N`` re-ingests (idempotent) and
alternates with the baseline N times, comparing medians, so both see the same machine load.
Uses the configured Redis (REDIS_URL) or the embedded Redis Stack, in a throw-away index.
Run: ``.venv/bin/python -m bench.ingest [--rounds 1]``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
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
    parser.add_argument("--rounds", type=int, default=1, help="ingest + baseline rounds, medians compared (default 1)")
    args = parser.parse_args(argv)
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    from bench.corpus import shared_data
    from keel.core.configuration import Configuration
    from keel.loaders.pipeline import expand_paths, ingest
    from keel.models.embeddings import embedding_model_path, get_embeddings
    from keel.stores.connections import get_redis
    from keel.stores.vector_store import RedisChunkStore

    hf_logging.set_verbosity_error()
    cfg = Configuration(index_name=f"bench_ingest_{uuid.uuid4().hex[:8]}")
    batch = cfg.embedding_batch_size
    client = get_redis(cfg)
    timed = TimedEmbeddings(get_embeddings(cfg))
    timed.inner.embed_documents(["warm-up: the model is loaded before anything is timed"] * 8)
    raw_model = SentenceTransformer(embedding_model_path(cfg), device="cpu", local_files_only=True)
    raw_model.encode(["warm-up"] * 8, batch_size=batch)
    store = RedisChunkStore(client, timed, cfg)
    store.ensure_index()
    files = list(expand_paths([shared_data() / "docs"]))
    user = f"bench-{uuid.uuid4().hex[:8]}"
    rounds = []  # (report, pipeline embedding seconds, texts, raw encode seconds)
    try:
        for _ in range(max(1, args.rounds)):
            timed.batches, timed.seconds = [], 0.0
            report = ingest(files, store, cfg, user_id=user)
            texts = [text for embedded in timed.batches for text in embedded]
            started = time.perf_counter()
            raw_model.encode(texts, batch_size=batch, normalize_embeddings=True)
            rounds.append((report, timed.seconds, texts, time.perf_counter() - started))
        pages = sum(doc["pages"] for doc in store.list_documents(user))
    finally:
        client.ft(cfg.index_name).dropindex(delete_documents=True)
        for key in client.scan_iter(f"{cfg.index_name}:*"):
            client.delete(key)

    report, _, texts, _ = rounds[0]
    if not report.documents or not texts:
        print("FAIL: nothing was ingested")
        return 1
    seconds = statistics.median(r.seconds for r, *_ in rounds)
    embed_seconds = statistics.median(e for _, e, _, _ in rounds)
    raw_seconds = statistics.median(raw for *_, raw in rounds)
    other = seconds - embed_seconds
    print(f"corpus: {len(files)} files in ../shared/data/docs; {report.documents} ingested "
          f"({pages} pages), {len(report.errors)} rejected with a reason; {len(rounds)} round(s), medians")
    print(f"pipeline: {seconds:.2f} s; {report.parents} parents, {report.children} children")
    print(f"  pages/s:  {pages / seconds:8.1f}")
    print(f"  chunks/s: {report.children / seconds:8.1f} (children, embedded and stored)")
    print(f"  time: embedding {embed_seconds:.2f} s ({embed_seconds / seconds:.0%}), "
          f"load + split + store {other:.2f} s ({other / seconds:.0%})")
    pipeline_rate = len(texts) / embed_seconds
    raw_rate = len(texts) / raw_seconds
    ratio = pipeline_rate / raw_rate
    print(f"\nembedding throughput on the same {len(texts)} chunk texts (batch size {batch}):")
    print(f"  pipeline, inside the ingest run:               {pipeline_rate:8.1f} texts/s")
    print(f"  raw sentence-transformers encode (baseline):   {raw_rate:8.1f} texts/s")
    passed = ratio >= TARGET_EMBEDDING_RATIO
    print(f"  ratio pipeline / raw: {ratio:.2f} (target >= {TARGET_EMBEDDING_RATIO}): {'PASS' if passed else 'FAIL'}")
    for error in report.errors:
        print(f"  rejected {error['source'].rsplit('/', 1)[-1]}: {error['error']}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
