"""``keel chat``: an interactive conversation with answers streamed as they are generated.

The live text is the answer loop's draft, from LangGraph custom stream events (already filtered:
no reasoning marker, not even half of one). The continuation indicator and retries are shown on
their own lines and are never part of the answer. Text already printed cannot be unprinted, so a
retraction (keel.discard: a rejected attempt's draft; keel.revert: a dropped continuation) prints a
note saying so, and the checked final answer, with its sources, is always printed again at the end.
"""

from __future__ import annotations

import sys

from keel.cli.running import render_answer

DIM, ITALIC, RESET = "\033[2m", "\033[3m", "\033[0m"


def chat_loop(graph, run_config: dict, conversation: str) -> int:
    print(f"Keel chat (conversation {conversation}). Empty line or Ctrl-D to quit.", file=sys.stderr)
    while True:
        try:
            question = input("you> ").strip()
        except EOFError:
            return 0
        if not question:
            return 0
        final = _stream_turn(graph, question, run_config)
        if final is None:
            continue
        print("\n" + render_answer(final) + "\n", flush=True)


def _styled(text: str, style: str, out=None) -> str:
    out = out or sys.stdout
    return f"{style}{text}{RESET}" if getattr(out, "isatty", lambda: False)() else text


def render_event(event: dict, out=None) -> str:
    """What one custom stream event looks like on the terminal."""
    kind = event.get("event")
    if kind == "keel.token":
        return str(event.get("text", ""))
    if kind == "keel.continuation":
        return "\n" + _styled(str(event.get("text", "")), ITALIC + DIM, out) + "\n"
    if kind == "keel.revert":
        note = f"[streamed text taken back ({event.get('reason', '')}); the answer so far:]"
        return "\n" + _styled(note, DIM, out) + "\n" + str(event.get("text", ""))
    if kind == "keel.discard":
        note = f"[draft of attempt {event.get('attempt', '?')} discarded ({event.get('reason', '')}); " \
               "the checked answer follows]"
        return "\n" + _styled(note, DIM, out) + "\n"
    if kind == "keel.attempt" and int(event.get("attempt", 1)) > 1:
        return "\n" + _styled(f"[attempt {event['attempt']}: {event.get('strategy', '')}]", DIM, out) + "\n"
    return ""


def _stream_turn(graph, question: str, run_config: dict, out=None) -> dict | None:
    """Print the draft live, then return the final state for the checked answer."""
    out, final = out or sys.stdout, None  # sys.stdout looked up now, not at import (tests, redirection)
    print("keel> ", end="", flush=True, file=out)
    for mode, payload in _modes(graph, question, run_config):
        if mode == "custom" and isinstance(payload, dict):
            print(render_event(payload, out), end="", flush=True, file=out)
        elif mode == "values":
            final = payload
    print(flush=True, file=out)
    return final


def _modes(graph, question: str, run_config: dict):
    for namespace, mode, payload in graph.stream(
        {"messages": [("human", question)]}, run_config, stream_mode=["custom", "values"], subgraphs=True
    ):
        if mode == "values" and namespace:
            continue  # the subgraph's own state; the outer graph's values come last
        yield mode, payload
