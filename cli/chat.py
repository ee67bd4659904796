"""``keel chat``: an interactive conversation with answers streamed as they are generated."""

from __future__ import annotations

import re
import sys

_TAGS = re.compile(r"</?answer>|</?thinking>")


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
        from cli.main import render_answer

        print("\n" + render_answer(final) + "\n", flush=True)


def _stream_turn(graph, question: str, run_config: dict) -> dict | None:
    """Print the model's tokens live (the draft), then the checked final answer."""
    final = None
    print("keel> ", end="", flush=True)
    for mode, payload in _modes(graph, question, run_config):
        if mode == "messages":
            chunk, metadata = payload
            if metadata.get("langgraph_node") == "generate_answer" and chunk.content:
                print(_TAGS.sub("", str(chunk.content)), end="", flush=True)
        elif mode == "values":
            final = payload
    print(flush=True)
    return final


def _modes(graph, question: str, run_config: dict):
    for namespace, mode, payload in graph.stream(
        {"messages": [("human", question)]}, run_config, stream_mode=["messages", "values"], subgraphs=True
    ):
        if mode == "values" and namespace:
            continue  # the subgraph's own state; the outer graph's values come last
        yield mode, payload
