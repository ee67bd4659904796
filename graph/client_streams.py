"""What Keel's graph shows whoever streams a turn: what a user may see, in every standard mode.

A turn's state holds more than its answer: the system prompt, the passages fitted to the prompt, the
rejected drafts of the answer loop, the model's name and its timings. LangGraph and LangChain stream
all of it unless told otherwise, so the compiled graph (``UserFacingGraph``) tells them:

- ``stream`` / ``astream`` (modes ``values`` and ``updates``) carry the output schema's keys only
  (``OutputState``: the answer, its sources, status, reasons, usage), as ``invoke`` does;
- ``astream_events`` carries the graph's own run (its input, its output chunks, its result) and the
  accepted answer as a chat model's stream (``keel_answer``, chains/answer_relay.py), no node's run;
- ``astream_log`` logs only the ``keel_answer`` run, and its streamed output is the answer as message
  chunks followed by its sources, so a client that renders a run log's streamed output (LangServe's
  playground) shows the answer as the chat page does; ``final_output`` is the turn's output;
- ``stream_mode="messages"`` already shows only the relayed answer and the messages nodes return;
- the answer loop runs apart (chains/unseen_run.py), so ``subgraphs=True`` adds nothing of it.

Tracing (LangSmith, a caller's own callbacks) is not a client stream and still sees every run. A
caller's own ``output_keys`` or filters still apply, within these bounds.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.messages import AIMessageChunk
from langchain_core.runnables.config import ensure_config
from langchain_core.tracers.log_stream import RunLog, RunLogPatch
from langgraph.graph.state import CompiledStateGraph

from keel.chains.answer_relay import ANSWER_ID_PREFIX, ANSWER_RUN_NAME

_ANSWER_LOG = f"/logs/{ANSWER_RUN_NAME}"
_STREAMED = "/streamed_output/-"
# astream_log's filters that log the answer's run and no other (a caller's exclusions still apply)
ANSWER_LOG_ONLY = {"include_names": [ANSWER_RUN_NAME], "include_types": None, "include_tags": None}


class UserFacingGraph(CompiledStateGraph):
    """A compiled chat graph whose streams carry what a user may see (see the module's docstring)."""

    def stream(self, input, config=None, *, output_keys=None, **kwargs):
        return super().stream(input, config, output_keys=self._shown(output_keys), **kwargs)

    def astream(self, input, config=None, *, output_keys=None, **kwargs):
        return super().astream(input, config, output_keys=self._shown(output_keys), **kwargs)

    def _shown(self, output_keys):
        return self.output_channels if output_keys is None else output_keys

    def astream_events(self, input, config=None, *, version="v2", **kwargs):
        if version not in ("v1", "v2"):  # v3 streams through stream(), bounded above
            return super().astream_events(input, config, version=version, **kwargs)
        return user_event_stream(super().astream_events, input, config, version=version, **kwargs)

    def astream_log(self, input, config=None, **kwargs):
        return answer_log(super().astream_log, input, config, **kwargs)


def user_facing(graph: CompiledStateGraph) -> UserFacingGraph:
    """``graph``, compiled by ``StateGraph.compile``, as a ``UserFacingGraph`` (same object)."""
    graph.__class__ = UserFacingGraph
    return graph  # type: ignore[return-value]


def user_event_stream(astream_events, input, config=None, **kwargs) -> AsyncIterator[dict]:
    """``astream_events(input, config, **kwargs)`` (a graph's own, or a binding's) as ``user_events``."""
    config = ensure_config(config)
    config.setdefault("run_id", uuid.uuid4())
    return user_events(astream_events(input, config, **kwargs), config["run_id"])


async def answer_log(astream_log, input, config=None, *, diff: bool = True, **kwargs) -> AsyncIterator[Any]:
    """``astream_log(input, config, **kwargs)`` logging only the answer's run, as ``user_log``."""
    kwargs.update(ANSWER_LOG_ONLY)
    async for item in user_log(astream_log(input, config, diff=True, **kwargs), diff=diff):
        yield item


async def user_events(events: AsyncIterator[dict], root_run_id: Any) -> AsyncIterator[dict]:
    """The events of the graph's own run and of the relayed answer, none of a node's."""
    async for event in events:
        if event.get("name") == ANSWER_RUN_NAME or event.get("run_id") == str(root_run_id):
            yield event


async def user_log(patches: AsyncIterator[RunLogPatch], diff: bool = True) -> AsyncIterator[RunLogPatch | RunLog]:
    """Run-log patches (``diff``; else the log so far after each) whose streamed output is the
    answer's chunks, then its sources.

    The graph's own streamed chunks (its state after each step) are dropped; each chunk of the
    relayed answer is added to the streamed output as it comes; when the run ends, the sources
    follow, or the whole answer if no node relayed one (a refusal before the answer loop)."""
    shown: RunLog | None = None
    async for patch in _user_patches(patches):
        if diff:
            yield patch
        else:
            shown = patch if shown is None else shown + patch
            yield shown


async def _user_patches(patches: AsyncIterator[RunLogPatch]) -> AsyncIterator[RunLogPatch]:
    state: RunLog | None = None
    relayed = None  # the relayed answer's message id
    async for patch in patches:
        state = patch if state is None else state + patch
        ops = []
        for op in patch.ops:
            path = op.get("path", "")
            if path == _STREAMED:
                continue
            ops.append(op)
            if path.startswith(_ANSWER_LOG) and path.endswith(_STREAMED) and op.get("op") == "add":
                ops.append({"op": "add", "path": _STREAMED, "value": op["value"]})
                relayed = getattr(op["value"], "id", None) or f"{ANSWER_ID_PREFIX}relayed"
        if ops:
            yield RunLogPatch(*ops)
    final = (state.state.get("final_output") if state is not None else None) or {}
    closing = _closing_chunk(final, relayed)
    if closing is not None:
        yield RunLogPatch({"op": "add", "path": _STREAMED, "value": closing})


def _turn_output(final: Any) -> dict:
    """The turn's output from a run log's final output: the graph's state (stream mode ``values``)
    or each node's update (``updates``, a compiled StateGraph's default), the last answering one."""
    if not isinstance(final, dict):
        return {}
    if "answer" in final:
        return final
    updates = [value for value in final.values() if isinstance(value, dict) and "answer" in value]
    return updates[-1] if updates else {}


def _closing_chunk(final: Any, relayed: str | None) -> AIMessageChunk | None:
    final = _turn_output(final)
    text = "" if relayed else str(final.get("answer") or "")
    sources = str(final.get("sources_markdown") or "").replace("**", "")  # shown as plain text
    if sources:
        text = f"{text}\n\n{sources}" if text or relayed else sources
    if not text:
        return None
    return AIMessageChunk(content=text, id=relayed or f"{ANSWER_ID_PREFIX}{uuid.uuid4()}")
