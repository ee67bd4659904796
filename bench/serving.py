"""Benchmark: the multi-user server under concurrent load, over HTTP on loopback.

Starts the real app (API keys, owners, limits) on a free loopback port over the configured or
embedded parts, adds two users who each upload one document, then sends ``--users`` x
``--requests`` questions at once (each user about their own document) and prints latency p50/p95,
throughput (answers/s), /healthz p50/max while the load runs, errors and crossed sources. The
checked figures and their bounds: 0 errors, 0 crossed sources and /healthz under 100 ms (p95);
prints PASS/FAIL and exits 1 on a miss. Uses a throw-away index and database.
Run: ``.venv/bin/python -m bench.serving [--requests 20] [--max-new-tokens 48]``.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

HEALTHZ_TARGET_S = 0.1
DOCUMENTS = {
    "alice": ("alder.txt", "Alder clinic notes. The vault code of the Alder clinic is 4411. It opens at 7 am.",
              "What is the vault code of the Alder clinic?", "4411"),
    "bob": ("birch.txt", "Birch harbour notes. The vault code of the Birch harbour is 9922. It opens at 9 pm.",
            "What is the vault code of the Birch harbour?", "9922"),
}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20, help="concurrent questions per user")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args(argv)

    import httpx

    from keel.core.configuration import Configuration
    from keel.server.app import create_app
    from keel.server.auth import ApiKeys
    from keel.server.background import serving
    from keel.stores.connections import get_redis

    tag = uuid.uuid4().hex[:8]
    total = args.requests * len(DOCUMENTS)
    cfg = Configuration(mongodb_database=f"keel_bench_{tag}", index_name=f"bench_serving_{tag}",
                        rate_limit_burst=total, max_queued_generations=total, generation_queue_timeout_s=3600)
    keys = ApiKeys.from_config(cfg)
    tokens = {user: keys.add(f"{user}-{tag}") for user in DOCUMENTS}
    latencies: list[float] = []
    health: list[float] = []
    errors = crossed = 0
    try:
        with serving(create_app(cfg=cfg)) as url, httpx.Client(base_url=url, timeout=3600) as client:
            doc_ids = {}
            for user, (name, text, _, _) in DOCUMENTS.items():
                body = {"filename": name, "data_base64": base64.b64encode(text.encode()).decode()}
                uploaded = client.post("/ingest", json=body, headers={"Authorization": f"Bearer {tokens[user]}"})
                uploaded.raise_for_status()
                doc_ids[user] = set(uploaded.json()["doc_ids"])

            def ask(user: str):
                question = DOCUMENTS[user][2]
                body = {"input": {"messages": [{"type": "human", "content": question}]},
                        "config": {"configurable": {"max_new_tokens": args.max_new_tokens}}}
                started = time.perf_counter()
                response = client.post("/chat/invoke", json=body, headers={"Authorization": f"Bearer {tokens[user]}"})
                return user, response, time.perf_counter() - started

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=total) as pool:
                futures = [pool.submit(ask, user) for user in DOCUMENTS for _ in range(args.requests)]
                while not all(f.done() for f in futures):
                    probe = time.perf_counter()
                    client.get("/healthz").raise_for_status()
                    health.append(time.perf_counter() - probe)
                    time.sleep(0.2)
            elapsed = time.perf_counter() - started
            for future in futures:
                user, response, seconds = future.result()
                latencies.append(seconds)
                if response.status_code != 200:
                    errors += 1
                    continue
                others = [u for u in DOCUMENTS if u != user]
                sources = response.json()["output"].get("sources") or []
                crossed += any(DOCUMENTS[o][3] in response.text for o in others) or any(
                    s["doc_id"] in doc_ids[o] for s in sources for o in others)
    finally:
        get_redis(cfg).ft(cfg.index_name).dropindex(delete_documents=True)

    print(f"{total} questions from {len(DOCUMENTS)} users at once, max_new_tokens {args.max_new_tokens}, "
          f"{cfg.max_concurrent_generations} generation slots")
    print(f"latency p50 {statistics.median(latencies):.2f} s, p95 {percentile(latencies, 0.95):.2f} s; "
          f"throughput {total / elapsed:.2f} answers/s over {elapsed:.1f} s")
    healthz_p95 = percentile(health, 0.95)
    print(f"/healthz during load: p50 {statistics.median(health) * 1000:.1f} ms, p95 {healthz_p95 * 1000:.1f} ms, "
          f"max {max(health) * 1000:.1f} ms over {len(health)} probes (target p95 < {HEALTHZ_TARGET_S * 1000:.0f} ms, "
          f"as the load test holds it)")
    print(f"errors {errors}, crossed sources {crossed}")
    ok = errors == 0 and crossed == 0 and healthz_p95 < HEALTHZ_TARGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
