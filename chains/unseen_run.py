"""Running the answer loop where no client stream can see it.

The answer loop writes drafts a check may still reject, with the system prompt, the model's name and
its timings in its state. Run as an ordinary subgraph, all of that reaches whoever streams the turn:
``stream_mode="values"`` / ``"updates"`` with ``subgraphs=True``, ``astream_events``, ``astream_log``
and LangServe's routes on top of them. ``run_unseen`` runs it as a graph of its own instead, with none
of the callback handlers that stream to a client (``private_model_config``), so only what the
answering node returns is shown; tracers (LangSmith) and a caller's own callbacks stay attached and
see every step, nested under the answering node.

The loop's live draft is meant for clients that can take text back (``stream_mode="custom"``, the
server's /chat/events): the answering node hands its own stream writer in, under ``DRAFT_STREAM_KEY``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from keel.chains.generation import private_model_config
from keel.components import DRAFT_STREAM_KEY

# What a run keeps when it leaves its parent graph: settings, ids, tracing. Not LangGraph's own keys
# (the parent's stream, checkpointer, task and namespace), which would make it the parent's subgraph.
_PARENT_ONLY_PREFIXES = ("__pregel_", "checkpoint_")


def run_unseen(runnable: Runnable, value: Any, config: RunnableConfig, *,
               draft_stream: Callable[[dict], None] | None = None) -> Any:
    """``runnable.invoke(value)`` outside every client stream of the run ``config`` belongs to, with
    the parent run's context (LangGraph's ``Runtime.context``: Studio's per-run settings), which a
    graph run of its own would not otherwise see. ``draft_stream`` receives the live-draft events."""
    context = _parent_context()
    private = dict(private_model_config(config))
    configurable = {key: item for key, item in (private.get("configurable") or {}).items()
                    if not key.startswith(_PARENT_ONLY_PREFIXES)}
    if draft_stream is not None:
        configurable[DRAFT_STREAM_KEY] = draft_stream
    private["configurable"] = configurable
    # a graph merges the ambient config (the parent node's) into its own: make it the private one too
    token = var_child_runnable_config.set(private)  # type: ignore[arg-type]
    try:
        if context is not None:
            return runnable.invoke(value, private, context=context)  # type: ignore[call-arg]
        return runnable.invoke(value, private)
    finally:
        var_child_runnable_config.reset(token)


def _parent_context() -> Any:
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except Exception:  # noqa: BLE001 - not called inside a graph run
        return None
