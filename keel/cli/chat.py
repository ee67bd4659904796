"""``keel chat``: an interactive conversation with answers streamed as they are generated.

On a terminal the answer is drawn while it is written, in a region that is redrawn in place
(keel/cli/live.py) and follows the answer loop's custom stream events, which carry the draft
already filtered (no reasoning marker, not even half of one):

    keel.progress       what the search found, as a dimmed note until the draft's first words
    keel.token          the draft grows
    keel.discard        a rejected attempt: its draft is erased
    keel.revert         text taken back (a dropped continuation, sentences the documents do not
                        support): the draft becomes the event's text
    keel.continuation   a dimmed note under the draft while the answer is continued
    keel.attempt        a retry (attempt 2 and on): a dimmed note until its first words

When the turn ends the region is erased and the checked final answer, with its sources, is printed
once. When stdout is not a terminal (a pipe, a file) nothing of the draft is printed, only the
final answer. Log records never land inside the draft (keel/cli/logs.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from keel.cli.live import LiveRegion, is_terminal
from keel.cli.running import question_problem, render_answer
from keel.core.configuration import Configuration

QUESTION_PROMPT, ANSWER_PREFIX = "you> ", "keel> "


def chat_loop(graph, run_config: dict, conversation: str, *,
              max_question_chars: int = Configuration.max_question_chars,
              out: TextIO | None = None, err: TextIO | None = None,
              terminal_size: tuple[int, int] | None = None, stdin: TextIO | None = None) -> int:
    """Ask, stream, print the answer; until Ctrl-D. An empty line asks again; a question that
    cannot be asked (too long) says why and asks again. ``terminal_size``: (columns, lines), for
    a caller that is not a real terminal; by default the terminal's own. Questions piped in are
    printed after the prompt, as a terminal would have echoed them, so a transcript reads as one."""
    out, err = out or sys.stdout, err or sys.stderr  # looked up now, not at import (tests, redirection)
    piped = not (stdin or sys.stdin).isatty()
    print(f"Keel chat (conversation {conversation}). Ctrl-D to quit.", file=err)
    while True:
        try:
            question = input(QUESTION_PROMPT)
        except EOFError:
            return 0
        if piped:
            print(question, file=out, flush=True)
        problem = question_problem(question, max_question_chars)
        if problem:
            if question.strip():
                print(f"keel chat: {problem}", file=err, flush=True)
            continue
        final = stream_turn(graph, question.strip(), run_config, out, terminal_size)
        if final is not None:
            print(ANSWER_PREFIX + render_answer(final) + "\n", file=out, flush=True)


@dataclass
class Draft:
    """The answer as the stream has it so far, and the note shown under it."""

    text: str = ""
    note: str = ""

    def apply(self, event: dict) -> bool:
        """Follow one custom stream event; False when it changes nothing on screen."""
        kind = event.get("event")
        if kind == "keel.token":
            self.text, self.note = self.text + str(event.get("text", "")), ""
        elif kind == "keel.revert":
            self.text, self.note = str(event.get("text", "")), ""
        elif kind == "keel.discard":
            self.text = ""
            self.note = f"[draft of attempt {event.get('attempt', '?')} discarded ({event.get('reason', '')})]"
        elif kind == "keel.continuation":
            self.note = str(event.get("text", ""))
        elif kind == "keel.progress" and not self.text:
            names = ", ".join(Path(str(name)).name for name in event.get("sources") or [])
            self.note = f"[found {event.get('passages', 0)} passage(s){' in ' + names if names else ''}; checking…]"
        elif kind == "keel.attempt" and int(event.get("attempt", 1)) > 1:
            retry = f"[attempt {event['attempt']}: {event.get('strategy', '')}]"
            self.note = f"{self.note} {retry}" if self.note else retry
        else:
            return False
        return True


def stream_turn(graph, question: str, run_config: dict, out: TextIO,
                terminal_size: tuple[int, int] | None = None) -> dict | None:
    """Run one turn, drawing the draft live on a terminal; the final state (None: the stream gave none)."""
    final = None
    if not is_terminal(out):
        for mode, payload in chat_modes(graph, question, run_config):
            final = payload if mode == "values" else final
        return final
    draft = Draft()
    with LiveRegion(out, terminal_size) as region:  # erased on the way out, whatever happens
        region.update(ANSWER_PREFIX)
        for mode, payload in chat_modes(graph, question, run_config):
            if mode == "custom" and isinstance(payload, dict):
                if draft.apply(payload):
                    region.update(ANSWER_PREFIX + draft.text, draft.note)
            elif mode == "values":
                final = payload
    return final


def chat_modes(graph, question: str, run_config: dict):
    """A turn's custom events and the outer graph's values, as ``keel chat`` shows them (here and in
    the warm service); saved once, when the turn ends."""
    from keel.graph.chat_graph import (
        whole_turn_saves,  # here: the client process never loads LangGraph
    )

    for namespace, mode, payload in graph.stream(
        {"messages": [("human", question)]}, run_config, stream_mode=["custom", "values"], subgraphs=True,
        **whole_turn_saves(graph),
    ):
        if mode == "values" and namespace:
            continue  # the subgraph's own state; the outer graph's values come last
        yield mode, payload
