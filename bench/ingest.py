"""Benchmark: the ingestion pipeline over ../shared/data/docs into real Redis Stack, the default
configuration against the ingestion Keel had before its ONNX runtime, read-ahead workers and OCR
batches, in the same run.

Prints pages/s and chunks/s of ``keel.loaders.pipeline.ingest`` (load → split → embed → store) and
the embedding throughput inside the run (texts / seconds inside its embed_documents calls) for:

- the named baseline **torch, 1 worker** (sentence-transformers, ``KEEL_EMBEDDING_RUNTIME=torch``,
  ``ingest_workers=1``: files read in the ingesting process, one after another;
  ``ocr_batch_pictures=1``: one Tesseract process per picture);
- the default runtime with one worker (what the faster embedder alone gives);
- the default configuration (default runtime, ``ingest_workers`` = one per core).

All three run today's loaders otherwise (the baseline gains from their other speed-ups) and embed
exactly the same chunk texts. Targets: the default's pages/s
>= 2.5x the baseline's; the runtime's embedding texts/s >= 3x, compared with one worker each (with
read-ahead workers the embedder shares its cores with them, which is the point); prints PASS/FAIL and exits 1 on a miss (or
when nothing was ingested). ``--rounds N`` alternates them N times and compares medians, so all see
the same machine load. Uses the configured Redis (REDIS_URL) or the embedded Redis Stack, in a
throw-away index. Run: ``.venv/bin/python -m bench.ingest [--rounds 1]``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
import uuid
from dataclasses import replace

from langchain_core.embeddings import Embeddings

TARGET_PAGES_RATIO = 2.5
TARGET_EMBEDDING_RATIO = 3.0
BASELINE = "torch, 1 worker"


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
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both runtimes, medians compared (default 1)")
    args = parser.parse_args(argv)
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    from bench.corpus import shared_data
    from keel.core.configuration import Configuration
    from keel.loaders.pipeline import expand_paths, ingest
    from keel.models.embeddings import get_embedding_tokenizer, get_embeddings
    from keel.stores.connections import get_redis
    from keel.stores.chunk_store import RedisChunkStore

    cfg = Configuration(index_name=f"bench_ingest_{uuid.uuid4().hex[:8]}")
    default = f"{cfg.embedding_runtime}, {cfg.ingest_workers or 'one per core'} workers (default)"
    runtime_alone = f"{cfg.embedding_runtime}, 1 worker"
    configs = {
        BASELINE: replace(cfg, embedding_runtime="torch", ingest_workers=1, ocr_batch_pictures=1),
        runtime_alone: replace(cfg, ingest_workers=1),
        default: cfg,
    }
    runtimes = list(configs)
    client = get_redis(cfg)
    timed = {name: TimedEmbeddings(get_embeddings(configs[name])) for name in runtimes}
    for embeddings in timed.values():
        embeddings.inner.embed_documents(["warm-up: the model is loaded before anything is timed"] * 8)
    get_embedding_tokenizer(cfg)  # the splitter's tokenizer too: the first runtime would pay its import
    files = list(expand_paths([shared_data() / "docs"]))
    runs: dict[str, list] = {name: [] for name in runtimes}  # (report, embedding seconds, texts, pages)
    try:
        for _ in range(max(1, args.rounds)):
            for name in runtimes:
                store = RedisChunkStore(client, timed[name], cfg)
                store.ensure_index()
                user = f"bench-{uuid.uuid4().hex[:8]}"  # a new user each run: everything is written again
                timed[name].batches, timed[name].seconds = [], 0.0
                report = ingest(files, store, configs[name], user_id=user)
                texts = [text for embedded in timed[name].batches for text in embedded]
                pages = sum(doc["pages"] for doc in store.list_documents(user))
                runs[name].append((report, timed[name].seconds, texts, pages))
    finally:
        client.ft(cfg.index_name).dropindex(delete_documents=True)
        for key in client.scan_iter(f"{cfg.index_name}:*"):
            client.delete(key)

    first = runs[BASELINE][0]
    if not first[0].documents or not first[2]:
        print("FAIL: nothing was ingested")
        return 1
    print(f"corpus: {len(files)} files in ../shared/data/docs; {first[0].documents} ingested ({first[3]} pages), "
          f"{len(first[0].errors)} rejected with a reason; {len(first[2])} chunk texts embedded; "
          f"{args.rounds} round(s), medians")
    rates = {}
    for name in runtimes:
        seconds = statistics.median(r.seconds for r, *_ in runs[name])
        embed_seconds = statistics.median(e for _, e, _, _ in runs[name])
        rates[name] = (first[3] / seconds, len(first[2]) / embed_seconds)
        label = f"{name} (baseline)" if name == BASELINE else name
        print(f"{label:36} pipeline {seconds:6.2f} s  {rates[name][0]:5.1f} pages/s  "
              f"{first[0].children / seconds:5.1f} chunks/s  embedding {embed_seconds:6.2f} s "
              f"({embed_seconds / seconds:.0%}, {rates[name][1]:6.1f} texts/s)  load + split + store "
              f"{seconds - embed_seconds:5.2f} s")
    pages_ratio = rates[default][0] / rates[BASELINE][0]
    embed_ratio = rates[runtime_alone][1] / rates[BASELINE][1]
    checks = {f"pages/s {pages_ratio:.2f}x the baseline (target >= {TARGET_PAGES_RATIO}x)":
                  pages_ratio >= TARGET_PAGES_RATIO,
              f"embedding texts/s {embed_ratio:.2f}x the baseline on the same chunks, both without read-ahead "
              f"workers (target >= {TARGET_EMBEDDING_RATIO}x)": embed_ratio >= TARGET_EMBEDDING_RATIO}
    for check, passed in checks.items():
        print(f"{'PASS' if passed else 'FAIL'}  {check}")
    for error in first[0].errors:
        print(f"  rejected {error['source'].rsplit('/', 1)[-1]}: {error['error']}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
