"""How the ``keel`` commands ask: the graph they run (with the conversation history), how files
are ingested, the run configuration of a question, and how an answer is printed.

One place for what ``keel ask``, ``keel chat``, ``keel demo`` and ``keel eval qa`` share, so an
eval measures exactly the user's path and the commands import this module, never each other.
The graph, the stores and the models are imported inside the functions: ``keel --help`` and
``keel users`` start without loading LangGraph, a model or a store client.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from keel.core.configuration import Configuration

log = logging.getLogger(__name__)

# What `keel ask --json` prints of the graph's result (more keys are added by the command).
ASK_KEYS = ("answer", "status", "route", "sources", "quality", "confidence", "attempts", "continuations", "usage",
            "sources_markdown", "standalone_question")
PRINTED_EXTRA_KEYS = ("sections", "review", "reasons", "grounding_score", "parse_layer")


def ingest_paths(paths: Sequence[Path], cfg: Configuration, conversation: str | None, password=None, progress=True):
    """Ingest files and folders for ``cfg.user_id`` (in ``conversation``, when given), as ``keel ingest``."""
    from keel.loaders.pipeline import ingest
    from keel.models.embeddings import get_embeddings
    from keel.stores.connections import get_vector_store

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no such file or folder: {', '.join(missing)}")
    if progress:
        say_start_up(cfg)
    store = get_vector_store(cfg, get_embeddings(cfg))
    thread = conversation_thread(cfg, conversation, filed=False) if conversation else None  # as its turns are
    return ingest(paths, store, cfg, user_id=cfg.user_id, conversation_id=thread, password=password,
                  progress=progress)


def say_start_up(cfg: Configuration, err=None) -> None:
    """Say on stderr what the seconds before the progress bar are spent on: the embedded Redis Stack
    starting (when it is not running yet) and the embedding model loading."""
    import sys

    from keel.runtime import servers

    err = err or sys.stderr
    waiting = [s for s in servers.status(cfg) if s.name == servers.REDIS and s.managed and not s.running]
    if waiting:
        print("keel: starting the embedded Redis Stack (about 10 s, once)...", file=err, flush=True)
    print("keel: loading the embedding model...", file=err, flush=True)


def graph_with_history(cfg: Configuration):
    """Keel's graph with the MongoDB conversation history, so a follow-up sees the earlier turns, and
    the review queue beside it, where a turn held for review waits for `keel review`."""
    from keel.graph import build_graph
    from keel.stores.history import get_checkpointer
    from keel.stores.review_queue import ReviewQueue

    return build_graph(checkpointer=get_checkpointer(cfg), review_queue=ReviewQueue.from_settings(cfg, cfg))


def keeps_history_in_mongodb(graph) -> bool:
    """Whether the graph keeps its conversations in Keel's MongoDB store (graph_with_history's)."""
    from keel.stores.resilient_history import ResilientCheckpointSaver

    return isinstance(getattr(graph, "checkpointer", None), ResilientCheckpointSaver)


def conversation_thread(cfg: Configuration, conversation: str, filed: bool = True) -> str:
    """The thread the user's conversation is kept under, the same one the web page and the server
    use (keel/server/ownership.py), so a conversation goes on wherever it is asked. ``filed``: also
    file it in the registry the page lists conversations from (where the history is Keel's MongoDB),
    best effort: a registry that cannot be reached costs the answer nothing."""
    from keel.server.ownership import ThreadOwners, thread_of

    if not filed:
        return thread_of(cfg.user_id, conversation)
    try:
        thread = ThreadOwners.from_config(cfg).claim(conversation, cfg.user_id)
    except Exception as error:  # noqa: BLE001 - the page's list is not worth a failed answer
        log.info("conversation %s not filed for the web page (%s)", conversation, error)
        return thread_of(cfg.user_id, conversation)
    if thread is None:
        raise ValueError(f"conversation id {conversation!r} is in use from an earlier version; choose another")
    return thread


def run_config(cfg: Configuration, thread: str, doc_ids: Sequence[str] = ()) -> dict:
    """The run configuration of one question: the conversation's thread, the user, the options."""
    configurable = {"thread_id": thread, "user_id": cfg.user_id, "grounding_mode": cfg.grounding_mode,
                    "answer_format": cfg.answer_format, "chat_model": cfg.chat_model}
    if doc_ids:
        configurable["doc_ids"] = list(doc_ids)
    return {"configurable": configurable}


def question_problem(question: str, max_chars: int) -> str | None:
    """Why ``question`` cannot be asked (nothing but spaces, or longer than ``max_chars``, the
    limit ``keel serve`` applies too), or None: such a question is the asker's mistake, said at
    once, not a turn of the graph that ends in an error status."""
    if not question.strip():
        return "the question is empty"
    if len(question.strip()) > max_chars:
        return f"the question is longer than {max_chars} characters"
    return None


def printed_state(result: dict) -> dict:
    """What ``render_answer`` and ``keel ask --json`` read of the graph's final state (not its
    messages): what the warm service sends back of a ``keel chat`` turn."""
    return {key: result.get(key) for key in (*ASK_KEYS, *PRINTED_EXTRA_KEYS) if key in result}


def render_answer(result: dict) -> str:
    """The answer as a person reads it: text, then the graph's own markdown source list, numbered
    as the answer's [Source N] (a result without one: the structured sources, unnumbered)."""
    lines = [result["answer"]]
    sections = result.get("sections") or {}
    if sections.get("explanation"):
        lines += ["", f"Explanation: {sections['explanation']}"]
    if result.get("sources_markdown"):
        lines += ["", result["sources_markdown"]]
    elif result.get("sources"):
        lines += ["", "Sources:"]
        for source in result["sources"]:
            page = f", page {source['page']}" if source.get("page") else ""
            lines.append(f"- {source['source']}{page}")
    if result.get("status") != "success":
        lines += ["", f"({result.get('status')})"]
    return "\n".join(lines)
