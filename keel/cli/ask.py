"""One ``keel ask`` turn: the graph run and the JSON object the command prints, the same whether
the command runs the graph itself or the warm CLI service runs it (keel/cli/warm_service.py)."""

from __future__ import annotations

import argparse
import io
import json
import time
from dataclasses import dataclass

from keel.cli import running
from keel.cli.ask_outcome import ask_exit_code, turn_saved
from keel.core.configuration import Configuration


@dataclass(frozen=True)
class AskRequest:
    """What a ``keel ask`` asks: everything that chooses the answer, nothing about printing it."""

    question: str
    user_id: str
    conversation: str
    grounding_mode: str | None = None
    answer_format: str | None = None
    doc_ids: tuple[str, ...] = ()
    chat_model: str | None = None  # a pool model (None: the configured chat_model)

    def configuration(self) -> Configuration:
        chosen = {"grounding_mode": self.grounding_mode, "answer_format": self.answer_format,
                  "chat_model": self.chat_model}
        return Configuration(user_id=self.user_id, **{k: v for k, v in chosen.items() if v is not None})


@dataclass(frozen=True)
class AskReply:
    """The printed object (``out``), and why the turn was not saved (None: it was)."""

    out: dict
    not_saved_because: str | None = None
    hint: str | None = None  # said on stderr: e.g. that the user asked as has no documents


def answer(request: AskRequest, graph=None) -> AskReply:
    """Run the question through ``graph`` (default: Keel's graph with the conversation history)."""
    from keel.graph.chat_graph import (
        whole_turn_saves,  # here: the client process never loads LangGraph
    )

    cfg = request.configuration()
    graph = graph if graph is not None else running.graph_with_history(cfg)
    started = time.perf_counter()
    question = {"messages": [("human", request.question.strip())]}
    # Keel's own store: the conversation is filed beside it, for the web page's list
    thread = running.conversation_thread(cfg, request.conversation, running.keeps_history_in_mongodb(graph))
    result = graph.invoke(question, running.run_config(cfg, thread, request.doc_ids), **whole_turn_saves(graph))
    out = {key: result.get(key) for key in running.ASK_KEYS}
    out["usage"] = out["usage"] or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    out["sources"] = out["sources"] or []
    out.update(grounding_score=result.get("grounding_score"), reasons=result.get("reasons", []),
               parse_layer=result.get("parse_layer"), conversation_id=request.conversation,
               seconds=round(time.perf_counter() - started, 3))
    if result.get("sections"):
        out["sections"] = result["sections"]  # answer_format "sectioned": citation, answer, explanation
    if result.get("review"):
        out["review"] = result["review"]  # held for a reviewer (status awaiting_review): `keel review show ID`
    out["saved"] = saved = turn_saved(graph)  # false: MongoDB was down; printed anyway, exit 3
    out["user_id"] = request.user_id
    return AskReply(out, None if saved else graph.checkpointer.describe_failure(), _no_documents_hint(cfg, out))


def _no_documents_hint(cfg: Configuration, out: dict) -> str | None:
    """When nothing was found because the user has no documents at all, say so and who asked: an
    "I don't know" for a user who ingested nothing (often the default user) is no answer to trust."""
    if out.get("status") == "success" or out.get("sources") or out.get("route") != "pretrained_corpus":
        return None
    try:
        from keel.models.embeddings import get_embeddings
        from keel.stores.connections import get_vector_store

        if get_vector_store(cfg, get_embeddings(cfg)).list_documents(cfg.user_id):
            return None
    except Exception:  # noqa: BLE001 - a hint must never fail the answer
        return None
    return (f"keel: user {cfg.user_id!r} has no documents; add some with "
            f"`keel ingest PATH --user {cfg.user_id}`, or ask as the user who has them (--user)")


@dataclass(frozen=True)
class Printed:
    """What a ``keel ask`` prints on each stream, and its exit code."""

    stdout: str
    stderr: str
    exit_code: int


def checked_request(args: argparse.Namespace, conversation: str) -> AskRequest:
    """The request of a parsed ``keel ask`` command line. Its settings are checked like any other
    (a ValueError names the bad one); a question that cannot be asked is a usage error, raised by
    the command's parser as for any other bad argument."""
    request = AskRequest(args.question, args.user, conversation, args.grounding, args.answer_format,
                         chat_model=args.model)
    cfg = request.configuration()
    problem = running.question_problem(args.question, cfg.max_question_chars)
    if problem:
        args.usage_error(problem)
    return request


def printed(reply: AskReply, as_json: bool) -> Printed:
    """The reply as the command prints it: one JSON object (``--json``) or the answer as people read
    it, and the warnings of an error status or an unsaved turn."""
    warnings = io.StringIO()
    if reply.hint:
        print(reply.hint, file=warnings)
    code = ask_exit_code(reply.out, reply.not_saved_because, warnings)
    text = json.dumps(reply.out, ensure_ascii=False) if as_json else running.render_answer(reply.out)
    return Printed(text + "\n", warnings.getvalue(), code)
