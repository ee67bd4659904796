"""Benchmark: conversations over two server replicas against one (the baseline), on loopback.

Starts two server processes (``create_app``, what ``keel serve`` runs, with this run's throw-away
index and database and limits that never refuse the load) over the configured or embedded Redis
Stack, Mongo-wire server and llama.cpp server, and the round-robin proxy of the replica tests
(tests/round_robin_proxy.py) in front. ``--users`` users each upload one small document of their
own. Then, once with the proxy over replica A alone (the baseline, "1 replica") and once over A and
B ("2 replicas"), ``--conversations`` conversations per user run at once, each ``--turns`` questions
in a row (a question, then follow-ups, every turn a request of its own, so consecutive turns of one
conversation land on different replicas). Prints answers per second, p50/p95 latency per answer,
errors and cross-user sources (a source whose doc id is not the asker's) for each, and the scaling
ratio (answers/s with 2 replicas over 1). The checked figures: 0 errors and 0 cross-user sources;
prints PASS/FAIL and exits 1 on a miss. The ratio is reported, not checked: both replicas share one
model server and the machine's cores, which bound it.

Run: ``.venv/bin/python -m bench.replica_load [--users 4] [--conversations 1] [--turns 2]``.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Each user's document: a made-up site with its own numbers, and the turns asked about it.
DOCUMENTS = [
    ("Alder clinic notes. The Alder clinic has 14 beds. The Alder clinic opens at 7 am and closes at 6 pm.",
     ["How many beds does the Alder clinic have?", "When does it open?", "And when does it close?"]),
    ("Birch harbour notes. The Birch harbour has 31 moorings. The Birch harbour opens at 9 am and closes at 9 pm.",
     ["How many moorings does the Birch harbour have?", "When does it open?", "And when does it close?"]),
    ("Cedar library notes. The Cedar library holds 5200 books. The Cedar library opens at 10 am and closes at 8 pm.",
     ["How many books does the Cedar library hold?", "When does it open?", "And when does it close?"]),
    ("Dune school notes. The Dune school has 480 pupils. The Dune school opens at 8 am and closes at 4 pm.",
     ["How many pupils does the Dune school have?", "When does it open?", "And when does it close?"]),
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def bench_config(tag: str):
    """This run's settings: a throw-away index and database, and limits wide enough for the load."""
    from keel.core.configuration import Configuration

    return Configuration(mongodb_database=f"keel_bench_{tag}", index_name=f"bench_replicas_{tag}",
                         rate_limit_burst=10_000, max_queued_generations=1_000, generation_queue_timeout_s=3600,
                         generation_timeout_s=3600)


def serve(tag: str, port: int) -> None:
    """One replica: the app ``keel serve`` runs, with ``bench_config(tag)``."""
    import uvicorn

    from keel.server.app import create_app

    uvicorn.run(create_app(cfg=bench_config(tag)), host="127.0.0.1", port=port, log_level="warning")


def run_phase(url: str, tokens: dict[str, str], doc_ids: dict[str, set[str]], questions: dict[str, list[str]],
              conversations: int, turns: int, max_new_tokens: int) -> dict:
    """Every user's conversations at once; each conversation's turns one after another."""
    import httpx

    def converse(user: str) -> list[tuple[float, bool, int]]:
        thread_id = f"bench-{uuid.uuid4().hex[:12]}"
        results = []
        with httpx.Client(base_url=url, timeout=3600, headers={"Authorization": f"Bearer {tokens[user]}"}) as client:
            for question in questions[user][:turns]:
                body = {"input": {"messages": [{"type": "human", "content": question}]},
                        "config": {"configurable": {"thread_id": thread_id, "max_new_tokens": max_new_tokens}}}
                started = time.perf_counter()
                response = client.post("/chat/invoke", json=body)
                seconds = time.perf_counter() - started
                if response.status_code != 200 or response.json()["output"].get("status") == "error":
                    results.append((seconds, False, 0))
                    continue
                sources = response.json()["output"].get("sources") or []
                results.append((seconds, True, sum(s.get("doc_id") not in doc_ids[user] for s in sources)))
        return results

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(tokens) * conversations) as pool:
        done = [f.result() for f in [pool.submit(converse, user) for user in tokens for _ in range(conversations)]]
    elapsed = time.perf_counter() - started
    turns_done = [turn for conversation in done for turn in conversation]
    latencies = [seconds for seconds, _, _ in turns_done]
    answers = sum(ok for _, ok, _ in turns_done)
    return {"answers": answers, "seconds": elapsed, "per_s": answers / elapsed,
            "p50": statistics.median(latencies), "p95": percentile(latencies, 0.95),
            "errors": sum(not ok for _, ok, _ in turns_done), "cross_user": sum(c for _, _, c in turns_done)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4, choices=range(1, len(DOCUMENTS) + 1))
    parser.add_argument("--conversations", type=int, default=1, help="conversations per user, all at once")
    parser.add_argument("--turns", type=int, default=2, choices=(1, 2, 3), help="questions per conversation")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--serve", nargs=2, metavar=("TAG", "PORT"), help=argparse.SUPPRESS)  # a replica process
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return 0

    import httpx

    from keel.server.auth import ApiKeys
    from keel.stores.connections import get_redis
    from tests.replica_processes import keel_env, replicas
    from tests.round_robin_proxy import round_robin

    tag = uuid.uuid4().hex[:8]
    cfg = bench_config(tag)
    keys = ApiKeys.from_config(cfg)
    users = [f"user{i}-{tag}" for i in range(args.users)]
    tokens = {user: keys.add(user) for user in users}
    questions = {user: DOCUMENTS[i][1] for i, user in enumerate(users)}
    command = [sys.executable, "-m", "bench.replica_load", "--serve", tag]
    phases = {}
    try:
        with tempfile.TemporaryDirectory() as logs, \
                replicas(["A", "B"], command, keel_env(), Path(logs)) as started:
            doc_ids = {}
            with httpx.Client(base_url=started["A"].url, timeout=600) as client:
                for i, user in enumerate(users):
                    body = {"filename": f"notes-{i}.txt", "data_base64": base64.b64encode(DOCUMENTS[i][0].encode()).decode()}
                    uploaded = client.post("/ingest", json=body, headers={"Authorization": f"Bearer {tokens[user]}"})
                    uploaded.raise_for_status()
                    doc_ids[user] = set(uploaded.json()["doc_ids"])
            for label, names in (("1 replica (baseline)", ["A"]), ("2 replicas", ["A", "B"])):
                with round_robin({name: started[name].url for name in names}) as (url, _):
                    phases[label] = run_phase(url, tokens, doc_ids, questions, args.conversations, args.turns,
                                              args.max_new_tokens)
    finally:
        get_redis(cfg).ft(cfg.index_name).dropindex(delete_documents=True)

    conversations = args.users * args.conversations
    print(f"{conversations} conversations at once ({args.users} users x {args.conversations}), {args.turns} turns "
          f"each, max_new_tokens {args.max_new_tokens}, {cfg.max_concurrent_generations} generation slots per replica, "
          "one model server")
    for label, p in phases.items():
        print(f"{label}: {p['answers']} answers in {p['seconds']:.1f} s = {p['per_s']:.3f} answers/s; latency p50 "
              f"{p['p50']:.2f} s, p95 {p['p95']:.2f} s; errors {p['errors']}, cross-user sources {p['cross_user']}")
    one, two = phases["1 replica (baseline)"], phases["2 replicas"]
    print(f"scaling ratio (answers/s, 2 replicas / 1): {two['per_s'] / one['per_s']:.2f}; "
          f"p95 latency ratio: {two['p95'] / one['p95']:.2f}")
    ok = all(p["errors"] == 0 and p["cross_user"] == 0 for p in phases.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
