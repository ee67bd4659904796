"""How well a compound question's parts are found: the rules' split against a tool-calling model's.

    keel eval subquestions --policy rules:qwen2.5-coder-1.5b --policy model:qwen2.5-coder-1.5b --answers

Each question of keel/evals/helpdesk/compound.json asks for one to three facts of the help-desk
documents, each with its gold answers. The documents go in through `keel ingest`'s own function; each
question goes through the graph's route_query node, as `keel ask` asks it (a fresh conversation each
time), with the policy's ``subquestion_splitter`` and chat model. A part counts as found when one of
the passages the route hands on (the first ``max_context_parents``, what the answer prompt is built
from first) holds one of its answers. Also reported: the questions whose every part was found, whether
a compound question was split into as many parts as it asks and a single one kept whole, and the mean
time route_query took (the model's split included). With answers, each question is asked through
the whole graph, which splits it again: the answer time includes that split.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from keel.components import Components
from keel.core.configuration import Configuration
from keel.evals.scoring import contains_gold
from keel.loaders.pipeline import ingest
from keel.models.embeddings import get_embeddings
from keel.nodes.route_query import route_query
from keel.runtime.model_pool import POOL
from keel.stores.connections import get_vector_store

COMPOUND_SET = Path(__file__).resolve().parent / "helpdesk" / "compound.json"


def load_set(path: Path) -> tuple[list[Path], list[dict]]:
    """The set's documents (as paths) and questions, each checked to have its parts' gold answers; a
    file that is not such a set is a ValueError naming the file and what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a JSON file ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list) \
            or not isinstance(data.get("questions"), list):
        raise ValueError(f"{path}: needs a \"documents\" list and a \"questions\" list")
    documents = [path.parent / str(name) for name in data["documents"]]
    missing = [str(d) for d in documents if not d.is_file()]
    if missing:
        raise ValueError(f"{path}: documents not found: {', '.join(missing)}")
    for number, question in enumerate(data["questions"], 1):
        parts = question.get("parts") if isinstance(question, dict) else None
        if not parts or not isinstance(question.get("question"), str) or not question["question"].strip() \
                or not all(isinstance(p, list) and p and all(isinstance(g, str) for g in p) for p in parts):
            raise ValueError(f"{path}: question {number} needs a question and parts, each a list of gold answers")
    return documents, data["questions"]


def _policy_settings(policy: str) -> dict:
    """``rules``, ``auto`` or ``model``, each optionally ``:<pool model>``: the splitter, and the chat
    model that splits (model, auto) and answers (the deployment's when not named)."""
    kind, _, model = policy.partition(":")
    if kind not in ("rules", "auto", "model"):
        raise ValueError(f"unknown policy {policy!r}: use rules, auto or model, each optionally :<pool model>")
    if model and model not in POOL:
        raise ValueError(f"policy {policy!r}: no chat model {model!r} in the pool; choose one of {', '.join(POOL)}")
    return {"subquestion_splitter": kind, **({"chat_model": model} if model else {})}


def run_policy(policy: str, questions: list[dict], user_id: str, components: Components, asker=None,
               progress: bool = False) -> dict:
    """The policy's splits and finds; with ``asker`` (keel ask's graph and run configuration), also its
    answers: complete when the turn succeeds and the answer holds every part's gold."""
    settings = _policy_settings(policy)
    complete = parts_answered = 0
    answer_seconds = 0.0
    parts_found = parts_total = all_found = 0
    compound_total = single_total = compound_right = single_right = 0
    seconds = 0.0
    within_two = 0
    rows = []
    from tqdm import tqdm

    for question in tqdm(questions, desc=policy, unit="q", file=sys.stderr, disable=not progress):
        config = {"configurable": {"user_id": user_id, "thread_id": f"split-{uuid.uuid4().hex[:8]}", **settings}}
        started = time.perf_counter()
        update = route_query({"question": question["question"]}, config, components=components)
        seconds += time.perf_counter() - started
        cfg = Configuration.from_runnable_config(config)
        shown = update["passages"][: cfg.max_context_parents or None]
        first = [_first_holding(shown, golds) for golds in question["parts"]]
        found = [position is not None for position in first]
        within_two += all(position is not None and position < 2 for position in first)
        parts_found += sum(found)
        parts_total += len(found)
        all_found += all(found)
        compound = len(question["parts"]) > 1
        right = len(update["subquestions"]) == len(question["parts"])  # a single question: kept whole
        compound_total += compound
        compound_right += compound and right
        single_total += not compound
        single_right += (not compound) and right
        row = {"id": question["id"], "subquestions": update["subquestions"], "first_passage": first}
        if asker is not None:
            graph, run_config = asker
            started = time.perf_counter()
            result = graph.invoke({"messages": [("human", question["question"])]},
                                  {"configurable": {**run_config(cfg, uuid.uuid4().hex)["configurable"], **settings}})
            answer_seconds += time.perf_counter() - started
            answer = result.get("answer") or "" if result.get("status") == "success" else ""
            holds = [contains_gold(answer, golds) for golds in question["parts"]]
            parts_answered += sum(holds)
            complete += all(holds)
            row.update(answer=result.get("answer"), status=result.get("status"), holds=holds)
        rows.append(row)
    count = len(questions)
    return {
        "policy": policy,
        "questions": count,
        "part_recall": round(parts_found / parts_total, 4),
        "all_parts_found": round(all_found / count, 4),
        "all_parts_in_first_two": round(within_two / count, 4),
        "compound_split_right": round(compound_right / compound_total, 4) if compound_total else None,
        "single_kept_whole": round(single_right / single_total, 4) if single_total else None,
        "mean_route_s": round(seconds / count, 3),
        **({"answers_complete": round(complete / count, 4), "parts_answered": round(parts_answered / parts_total, 4),
            "mean_answer_s": round(answer_seconds / count, 3)} if asker is not None else {}),
        "rows": rows,
    }


def _first_holding(passages: list[dict], golds: list[str]) -> int | None:
    return next((i for i, p in enumerate(passages) if contains_gold(p["text"], golds)), None)


def measure(path: Path, policies: list[str], make_asker: Callable[[Configuration], tuple] | None = None,
            progress: bool = False) -> dict:
    """Every policy on the set's questions, the documents ingested once for a fresh user; with
    ``make_asker`` (the user's settings -> keel ask's graph and run configuration), answers too."""
    documents, questions = load_set(path)
    for policy in policies:
        _policy_settings(policy)  # a bad policy is refused before anything is ingested
    cfg = Configuration(user_id=f"split-{uuid.uuid4().hex[:8]}")
    embeddings = get_embeddings(cfg)
    store = get_vector_store(cfg, embeddings)
    components = Components(embeddings=embeddings)
    try:
        report = ingest(documents, store, cfg, user_id=cfg.user_id, progress=False)
        if report.errors:
            raise ValueError(f"{path}: could not ingest {report.errors}")
        asker = make_asker(cfg) if make_asker is not None else None
        return {"file": str(path),
                "results": [run_policy(p, questions, cfg.user_id, components, asker, progress) for p in policies]}
    finally:
        for doc in store.list_documents(cfg.user_id):
            store.delete_document(cfg.user_id, doc["doc_id"])


def table(results: list[dict]) -> str:
    """The results as a Markdown table, one row per split policy."""
    lines = ["| policy | part recall | every part found | every part in first two | compound split right "
             "| single kept whole | route time |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    answered = all("answers_complete" in r for r in results)
    if answered:
        lines[0] += " answers complete | parts answered | answer time |"
        lines[1] += " ---: | ---: | ---: |"
    for r in results:
        extra = (f" {r['answers_complete']:.3f} | {r['parts_answered']:.3f} | {r['mean_answer_s']:.2f} s |"
                 if answered else "")
        lines.append(f"| {r['policy']} | {r['part_recall']:.3f} | {r['all_parts_found']:.3f} | "
                     f"{r['all_parts_in_first_two']:.3f} | {r['compound_split_right']} | {r['single_kept_whole']} | "
                     f"{r['mean_route_s']:.2f} s |" + extra)
    return "\n".join(lines)
