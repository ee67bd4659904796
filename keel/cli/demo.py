"""``keel demo``: the main job on the embedded default. Ingests the bundled sample documents
(samples/: Markdown, text and a PDF Keel generates) for a demo user and answers a sample question
with its sources."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEMO_USER = "demo"
DEMO_QUESTION = "Within how many days of the date of service must a member file a claim?"


def run_demo(args, ingest, build_graph, run_config, render_answer, ask_keys) -> int:
    from keel.core.configuration import Configuration

    cfg = Configuration(user_id=DEMO_USER)
    started = time.perf_counter()
    report = ingest([SAMPLES], cfg, None, progress=not args.json)
    ingest_seconds = time.perf_counter() - started
    conversation = uuid.uuid4().hex
    started = time.perf_counter()
    result = build_graph(cfg).invoke({"messages": [("human", DEMO_QUESTION)]}, run_config(cfg, conversation))
    out = {key: result.get(key) for key in ask_keys}
    out.update(question=DEMO_QUESTION, ingested=report.documents, ingest_errors=report.errors,
               ingest_seconds=round(ingest_seconds, 3), answer_seconds=round(time.perf_counter() - started, 3))
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"Ingested {report.documents} sample document(s) from {SAMPLES} in {ingest_seconds:.1f}s.")
        print(f"\nQ: {DEMO_QUESTION}\n")
        print(render_answer(out))
        print(f"\n(answered in {out['answer_seconds']:.1f}s; route {out['route']}, quality {out['quality']})")
    return 0 if out["status"] == "success" else 2
