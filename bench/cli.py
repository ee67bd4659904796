"""Benchmark: what a person waits for a `keel ask`, against the graph's own time, and the memory of
`keel ask` and `keel serve`.

    .venv/bin/python -m bench.cli [--questions 5]

Under a temporary KEEL_HOME (embedded servers started once, before anything is timed) the bundled
samples are ingested as `keel demo` does; then each mode asks the samples question and
``--questions`` - 1 others, each as its own `keel ask --json` process:

* **warm service** (the default): the process's wall time / the graph's own time for the same
  question (the ``seconds`` of its JSON), median; the first command, which starts the service,
  is timed apart. Target <= 1.3.
* **baseline, no service** (``KEEL_CLI_SERVICE=off``, every command loading everything itself),
  in the same run.
* **in-process graph**: one Python process builds Keel's graph once and answers the same questions
  through the same turn function (``keel.cli.ask.answer``, a new conversation each, as `keel ask`
  does), after one warm-up question; each question's time there is what a `keel ask` of it through
  the warm service is compared with (target <= 1.3): what the service adds to a turn, which
  dividing by the service's own graph time would hide.

Memory, each beside its baseline: peak RSS of one `keel ask` process in both modes and of the
warm service; of `keel serve` (``--no-auth`` on loopback) after one answer, with the default
embedding runtime and with ``KEEL_EMBEDDING_RUNTIME=torch``. Exits 1 when the ratio misses.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from keel.cli.demo import DEMO_QUESTION, SAMPLES

TARGET_RATIO = 1.3
ROOT = Path(__file__).resolve().parents[1]
OTHER_QUESTIONS = ("How do I reach the help desk?", "Who built the Varden lighthouse?",
                   "When is the clinic open?", "What does the plan cover?")
USER = "bench-cli"
KEEL = [sys.executable, "-m", "keel.cli.entry"]  # what the installed `keel` script runs


def keel_process(args: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``keel ARGS``: its result and wall seconds."""
    started = time.perf_counter()
    completed = subprocess.run([*KEEL, *args], cwd=ROOT, env=env,
                               capture_output=True, text=True)
    return completed, time.perf_counter() - started


def peak_rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def ask_round(env: dict, questions: list[str]) -> list[dict]:
    rows = []
    for question in questions:
        completed, wall = keel_process(["ask", question, "--user", USER, "--json"], env)
        if completed.returncode not in (0, 3):
            raise SystemExit(f"keel ask failed ({completed.returncode}): {completed.stderr[-2000:]}")
        graph = json.loads(completed.stdout)["seconds"]
        rows.append({"question": question, "wall_s": wall, "graph_s": graph, "ratio": wall / graph})
    return rows


IN_PROCESS = """
import json, sys, time, uuid
from keel.cli.ask import AskRequest, answer
from keel.cli import running
questions, user = json.loads(sys.argv[1]), sys.argv[2]
graph = running.graph_with_history(AskRequest(questions[0], user, "warm-up").configuration())
answer(AskRequest(questions[0], user, uuid.uuid4().hex), graph)
rows = []
for question in questions:
    started = time.perf_counter()
    reply = answer(AskRequest(question, user, uuid.uuid4().hex), graph)
    rows.append({"question": question, "wall_s": time.perf_counter() - started, "graph_s": reply.out["seconds"]})
print(json.dumps(rows))
"""


def in_process_round(env: dict, questions: list[str]) -> list[dict]:
    """Each question answered by a graph built once in one process, timed around the turn."""
    completed = subprocess.run([sys.executable, "-c", IN_PROCESS, json.dumps(questions), USER], cwd=ROOT, env=env,
                               capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"the in-process graph failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def one_ask_peak(env: dict) -> int:
    """Peak RSS (MB) of one `keel ask`, measured in a fresh helper so no earlier child counts."""
    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'keel.cli.entry', 'ask', "
            f"{DEMO_QUESTION!r}, '--user', {USER!r}, '--json'], capture_output=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)")
    return int(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=True).stdout.strip())


def serve_peak(env: dict, port: int) -> int:
    """Peak RSS (MB) of `keel serve` after it has answered the samples question once."""
    server = subprocess.Popen([*KEEL, "serve", "--no-auth", "--port", str(port)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            deadline = time.monotonic() + 300
            while True:
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("keel serve did not start")
                time.sleep(0.5)
            body = {"input": {"messages": [{"type": "human", "content": DEMO_QUESTION}]},
                    "config": {"configurable": {"user_id": USER}}}
            client.post("/chat/invoke", json=body).raise_for_status()
        return peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=5, help="questions per mode (default 5)")
    parser.add_argument("--port", type=int, default=8931, help="loopback port for `keel serve`")
    args = parser.parse_args(argv)
    home = tempfile.mkdtemp(prefix="keel-bench-cli-")
    env = {**os.environ, "KEEL_HOME": home}
    env.pop("KEEL_CLI_SERVICE", None)
    questions = [DEMO_QUESTION, *OTHER_QUESTIONS][:max(1, args.questions)]
    try:
        subprocess.run([*KEEL, "servers", "start"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        subprocess.run([*KEEL, "ingest", str(SAMPLES), "--user", USER, "--json"],
                       cwd=ROOT, env=env, check=True, capture_output=True)
        off = {**env, "KEEL_CLI_SERVICE": "off"}
        baseline = ask_round(off, questions)
        started, start_wall = keel_process(["ask", DEMO_QUESTION, "--user", USER, "--json"], env)
        warm = ask_round(env, questions)
        in_process = in_process_round(env, questions)
        memory = {"keel ask, no service": one_ask_peak(off), "keel ask, warm service": one_ask_peak(env)}
        status = subprocess.run([*KEEL, "servers", "status"], cwd=ROOT, env=env,
                                capture_output=True, text=True).stdout
        service_pids = [int(line.split()[-1]) for line in status.splitlines() if line.startswith("cli ")]
        memory["warm service process"] = peak_rss_mb(service_pids[0]) if service_pids else 0
        memory["keel serve"] = serve_peak(env, args.port)
        memory["keel serve, KEEL_EMBEDDING_RUNTIME=torch"] = serve_peak({**env, "KEEL_EMBEDDING_RUNTIME": "torch"},
                                                                        args.port)
    finally:
        subprocess.run([*KEEL, "servers", "stop"], cwd=ROOT, env=env,
                       capture_output=True)
    ratio = statistics.median(w["wall_s"] / p["wall_s"] for w, p in zip(warm, in_process))
    base_ratio = statistics.median(r["ratio"] for r in baseline)
    own_ratio = statistics.median(r["ratio"] for r in warm)
    print(f"{len(questions)} questions per mode, each a `keel ask --json` process; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'mode':32} {'wall s':>8} {'graph s':>8} {'wall/graph':>11}   (median)")
    for name, rows in (("baseline: no service", baseline), ("warm service (default)", warm)):
        print(f"{name:32} {statistics.median(r['wall_s'] for r in rows):8.2f} "
              f"{statistics.median(r['graph_s'] for r in rows):8.2f} {statistics.median(r['ratio'] for r in rows):11.2f}")
    print(f"{'in-process graph, one process':32} {statistics.median(r['wall_s'] for r in in_process):8.2f} "
          f"{statistics.median(r['graph_s'] for r in in_process):8.2f}")
    for w, p in zip(warm, in_process):
        print(f"  {w['question'][:44]:44} keel ask {w['wall_s']:6.2f} s, in-process {p['wall_s']:6.2f} s")
    print(f"samples question: {baseline[0]['wall_s']:.2f} s without the service, {warm[0]['wall_s']:.2f} s warm "
          f"(graph {warm[0]['graph_s']:.2f} s); the command that started the service: {start_wall:.2f} s "
          f"(exit {started.returncode})")
    print("peak RSS (MB): " + ", ".join(f"{name} {mb}" for name, mb in memory.items()))
    passed = ratio <= TARGET_RATIO
    print(f"{'PASS' if passed else 'FAIL'}  warm `keel ask` wall / the in-process graph's turn {ratio:.2f} "
          f"(target <= {TARGET_RATIO}); wall / the service's own graph time {own_ratio:.2f}; "
          f"without the service {base_ratio:.2f}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
