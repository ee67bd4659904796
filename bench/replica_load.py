"""Benchmark: conversations over two server replicas against one (the baseline), on loopback.

Starts two server processes (``create_app``, what ``keel serve`` runs, with this run's throw-away
index and database and limits that never refuse the load) over the configured or embedded Redis
Stack, Mongo-wire server and llama.cpp server, and the round-robin proxy of the replica tests
(tests/round_robin_proxy.py) in front. Each user uploads one small document of their own about a
made-up place (``--users`` users for each setup; the two setups ask about different places of the
same shape, so the model server's prompt cache favours neither). Then, once with the proxy over
replica A alone (the baseline, "1 replica") and once over A and B ("2 replicas"),
``--conversations`` conversations per user run at once (each replica has answered one question
first, unmeasured, so neither setup pays for loading the models), each ``--turns`` questions in a
row (a question, then follow-ups, every turn a request of its own, so consecutive turns of one
conversation land on different replicas). Prints answers per second, p50/p95 latency per answer,
the answers' statuses, errors and cross-user sources (a source whose doc id is not the asker's) for
each, and the scaling ratio (answers/s with 2 replicas over 1). The checked figures: 0 errors and 0
cross-user sources; prints PASS/FAIL and exits 1 on a miss. The ratio is reported, not checked:
both replicas share one model server and the machine's cores, which bound it.

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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Each user's document: a made-up place with its own numbers, and the turns asked about it. The two
# setups ask about different places of the same shape, so neither gets the other's prompts from the
# model server's prompt cache (the first run of this benchmark asked the same ones twice, and the
# second setup answered several times faster: the cache, or less load from others, could not be told).
PLACES = [("Alder clinic", "beds", 14), ("Birch harbour", "moorings", 31), ("Cedar library", "reading rooms", 52),
          ("Dune school", "classrooms", 48), ("Elm depot", "trucks", 17), ("Fir station", "platforms", 23),
          ("Gorse market", "stalls", 66), ("Hazel museum", "galleries", 12)]
HOURS = [(7, 6), (9, 9), (10, 8), (8, 4), (6, 5), (5, 11), (7, 3), (10, 6)]


def document(index: int) -> tuple[str, list[str]]:
    """The text of place ``index`` and its questions: a count, then two follow-ups."""
    (place, things, count), (opens, closes) = PLACES[index], HOURS[index]
    text = (f"{place} notes. The {place} has {count} {things}. The {place} opens at {opens} am and closes at "
            f"{closes} pm. Visitors of the {place} sign in at the front desk.")
    return text, [f"How many {things} does the {place} have?", "When does it open?", "And when does it close?"]


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

    def converse(user: str) -> list[tuple[float, bool, int, str]]:
        thread_id = f"bench-{uuid.uuid4().hex[:12]}"
        results = []
        with httpx.Client(base_url=url, timeout=3600, headers={"Authorization": f"Bearer {tokens[user]}"}) as client:
            for question in questions[user][:turns]:
                body = {"input": {"messages": [{"type": "human", "content": question}]},
                        "config": {"configurable": {"thread_id": thread_id, "max_new_tokens": max_new_tokens}}}
                started = time.perf_counter()
                response = client.post("/chat/invoke", json=body)
                seconds = time.perf_counter() - started
                output = response.json().get("output") or {} if response.status_code == 200 else {}
                if response.status_code != 200 or output.get("status") == "error":
                    what = f"HTTP {response.status_code} {response.text[:200]}" if response.status_code != 200 else \
                        f"status error {output.get('reasons')}"
                    results.append((seconds, False, 0, what))
                    continue
                sources = output.get("sources") or []
                results.append((seconds, True, sum(s.get("doc_id") not in doc_ids[user] for s in sources),
                                str(output.get("status"))))
        return results

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(tokens) * conversations) as pool:
        done = [f.result() for f in [pool.submit(converse, user) for user in tokens for _ in range(conversations)]]
    elapsed = time.perf_counter() - started
    turns_done = [turn for conversation in done for turn in conversation]
    latencies = [seconds for seconds, _, _, _ in turns_done]
    answers = sum(ok for _, ok, _, _ in turns_done)
    return {"answers": answers, "seconds": elapsed, "per_s": answers / elapsed,
            "p50": statistics.median(latencies), "p95": percentile(latencies, 0.95),
            "errors": sum(not ok for _, ok, _, _ in turns_done), "cross_user": sum(c for _, _, c, _ in turns_done),
            "statuses": dict(Counter(what for _, ok, _, what in turns_done if ok)),
            "error_details": [what for _, ok, _, what in turns_done if not ok]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4, choices=range(1, len(PLACES) // 2 + 1))
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
    setups = {"1 replica (baseline)": ["A"], "2 replicas": ["A", "B"]}
    places = {label: range(i * args.users, (i + 1) * args.users) for i, label in enumerate(setups)}
    users = {index: f"user{index}-{tag}" for indices in places.values() for index in indices}
    tokens = {user: keys.add(user) for user in users.values()}
    warm_up_key = keys.add(f"warmup-{tag}")
    questions = {users[index]: document(index)[1] for index in users}
    command = [sys.executable, "-m", "bench.replica_load", "--serve", tag]
    phases = {}
    try:
        logs = Path(tempfile.mkdtemp(prefix="keel-replica-bench-"))  # the replicas' logs, kept for a look
        with replicas(["A", "B"], command, keel_env(), logs) as started:
            doc_ids = {}
            with httpx.Client(base_url=started["A"].url, timeout=600) as client:
                for index, user in users.items():
                    text = document(index)[0]
                    body = {"filename": f"notes-{index}.txt", "data_base64": base64.b64encode(text.encode()).decode()}
                    uploaded = client.post("/ingest", json=body, headers={"Authorization": f"Bearer {tokens[user]}"})
                    uploaded.raise_for_status()
                    doc_ids[user] = set(uploaded.json()["doc_ids"])
            for replica in started.values():  # each loads its tokenizer, embeddings and moderator once, unmeasured
                warm = httpx.post(f"{replica.url}/chat/invoke", timeout=600,
                                  headers={"Authorization": f"Bearer {warm_up_key}"},
                                  json={"input": {"messages": [{"type": "human", "content": "Is anyone there?"}]},
                                        "config": {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex[:8]}"}}})
                warm.raise_for_status()
            for label, names in setups.items():
                askers = {users[index]: tokens[users[index]] for index in places[label]}
                with round_robin({name: started[name].url for name in names}) as (url, _):
                    phases[label] = run_phase(url, askers, doc_ids, questions, args.conversations, args.turns,
                                              args.max_new_tokens)
    finally:
        get_redis(cfg).ft(cfg.index_name).dropindex(delete_documents=True)

    conversations = args.users * args.conversations
    print(f"{conversations} conversations at once ({args.users} users x {args.conversations}), {args.turns} turns "
          f"each, max_new_tokens {args.max_new_tokens}, {cfg.max_concurrent_generations} generation slots per replica, "
          "one model server")
    for label, p in phases.items():
        print(f"{label}: {p['answers']} answers in {p['seconds']:.1f} s = {p['per_s']:.3f} answers/s; latency p50 "
              f"{p['p50']:.2f} s, p95 {p['p95']:.2f} s; errors {p['errors']}, cross-user sources {p['cross_user']}; "
              f"statuses {p['statuses']}")
        for detail in p["error_details"]:
            print(f"  error: {detail}")
    one, two = phases["1 replica (baseline)"], phases["2 replicas"]
    print(f"scaling ratio (answers/s, 2 replicas / 1): {two['per_s'] / one['per_s']:.2f}; "
          f"p95 latency ratio: {two['p95'] / one['p95']:.2f}")
    print(f"replica logs: {logs}")
    ok = all(p["errors"] == 0 and p["cross_user"] == 0 for p in phases.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
