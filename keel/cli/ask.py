"""One ``keel ask`` turn: the graph run and the JSON object the command prints, the same whether
the command runs the graph itself or the warm CLI service runs it (keel/cli/warm_service.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from keel.cli import running
from keel.cli.ask_outcome import turn_saved
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

    def configuration(self) -> Configuration:
        chosen = {"grounding_mode": self.grounding_mode, "answer_format": self.answer_format}
        return Configuration(user_id=self.user_id, **{k: v for k, v in chosen.items() if v is not None})


@dataclass(frozen=True)
class AskReply:
    """The printed object (``out``), and why the turn was not saved (None: it was)."""

    out: dict
    not_saved_because: str | None = None


def answer(request: AskRequest, graph=None) -> AskReply:
    """Run the question through ``graph`` (default: Keel's graph with the conversation history)."""
    cfg = request.configuration()
    graph = graph if graph is not None else running.graph_with_history(cfg)
    started = time.perf_counter()
    question = {"messages": [("human", request.question.strip())]}
    result = graph.invoke(question, running.run_config(cfg, request.conversation, request.doc_ids))
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
    return AskReply(out, None if saved else graph.checkpointer.describe_failure())


