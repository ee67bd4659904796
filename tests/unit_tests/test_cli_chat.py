"""`keel chat` as a person sees it: the answer loop's stream drawn on a terminal, checked with a real
terminal emulator (pyte), and the same stream through a pipe. A discarded draft must vanish, the
final answer must be on screen once, a log record must never land inside the draft."""

from __future__ import annotations

import io
import logging

import pyte
import pytest

from keel.cli.chat import chat_loop
from keel.cli.logs import ConsoleLogHandler

COLUMNS, LINES = 60, 24
FINAL = {"answer": "Mara Holt built it [Source 1].", "status": "success", "sources": [],
         "sources_markdown": "[Source 1] varden-report.pdf, page 2"}


class Terminal(io.StringIO):
    """What the chat writes to a terminal; ``screen`` is what the person sees after it."""

    def isatty(self) -> bool:
        return True

    def screen(self, columns: int = COLUMNS, lines: int = LINES, history: bool = False):
        screen = pyte.HistoryScreen(columns, lines, history=1000) if history else pyte.Screen(columns, lines)
        # a terminal's output processing turns "\n" into carriage return + line feed (onlcr)
        pyte.Stream(screen).feed(self.getvalue().replace("\n", "\r\n"))
        return screen


def rows(screen) -> list[str]:
    return [line.rstrip() for line in screen.display if line.strip()]


def history_rows(screen) -> list[str]:
    return ["".join(char.data for char in row.values()).rstrip() for row in screen.history.top]


class StreamingGraph:
    """Yields the events of one turn like `graph.stream(..., stream_mode=["custom", "values"], subgraphs=True)`;
    a callable in ``events`` runs at that point (to log mid-stream, or look at the screen)."""

    def __init__(self, events, final=FINAL):
        self.events, self.final = events, final

    def stream(self, *args, **kwargs):
        for event in self.events:
            if callable(event):
                event()
            else:
                yield ("answer",), "custom", event
        yield (), "values", self.final


RETRACTED_TURN = [
    {"event": "keel.attempt", "attempt": 1, "strategy": "grounded"},
    {"event": "keel.token", "text": "Gustave Eiffel ", "attempt": 1},
    {"event": "keel.token", "text": "built it.", "attempt": 1},
    {"event": "keel.discard", "attempt": 1, "reason": "ungrounded"},
    {"event": "keel.attempt", "attempt": 2, "strategy": "strict"},
    {"event": "keel.token", "text": "Mara Holt built it. Bananas", "attempt": 2},
    {"event": "keel.revert", "text": "Mara Holt built it.", "attempt": 2, "reason": "stream_check:off_topic"},
]


def chat(graph, out, questions=("Who built the lighthouse?",), **options) -> int:
    """Run the chat loop; the fake keyboard echoes each question onto ``out`` as a terminal would."""
    pending = list(questions)

    def typed(prompt=""):
        if not pending:
            raise EOFError
        question = pending.pop(0)
        out.write(prompt + question + "\n")
        return question

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.input", typed)
        return chat_loop(graph, {}, "conv-1", out=out, err=io.StringIO(), stdin=Terminal(), **options)


def test_on_a_terminal_a_discarded_draft_is_erased_and_the_final_answer_shown_once():
    term = Terminal()
    assert chat(StreamingGraph(RETRACTED_TURN), term, terminal_size=(COLUMNS, LINES)) == 0
    assert "Gustave Eiffel" in term.getvalue()  # the draft was drawn while it streamed...
    shown = rows(term.screen())
    assert shown == ["you> Who built the lighthouse?", "keel> Mara Holt built it [Source 1].",
                     "[Source 1] varden-report.pdf, page 2"]  # ...and nothing of it is left


def test_through_a_pipe_only_the_final_answer_is_printed_once():
    out = io.StringIO()
    assert chat(StreamingGraph(RETRACTED_TURN), out) == 0
    printed = out.getvalue()
    assert "Eiffel" not in printed and "Bananas" not in printed and "discarded" not in printed
    assert printed.count("Mara Holt built it") == 1
    assert "\033" not in printed  # no cursor movement or colour in a file
    assert "keel> Mara Holt built it [Source 1].\n\n[Source 1] varden-report.pdf, page 2\n" in printed


def test_questions_piped_in_are_printed_before_their_answers():
    out, pending = io.StringIO(), ["Who built the lighthouse?"]

    def piped(prompt=""):  # input() from a pipe writes the prompt and echoes nothing
        if not pending:
            raise EOFError
        out.write(prompt)
        return pending.pop(0)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.input", piped)
        assert chat_loop(StreamingGraph(RETRACTED_TURN), {}, "conv-1", out=out, err=io.StringIO(),
                         stdin=io.StringIO()) == 0
    assert out.getvalue().startswith("you> Who built the lighthouse?\nkeel> Mara Holt built it [Source 1].")


def test_a_log_record_while_the_answer_streams_gets_its_own_line_and_the_draft_is_drawn_again_below():
    term = Terminal()
    handler = ConsoleLogHandler(term)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("keel.answer")
    logger.addHandler(handler)
    seen = {}

    def log_mid_sentence():
        logger.warning("the chat model failed; retrying")
        seen["screen"] = rows(term.screen())

    events = [{"event": "keel.token", "text": "The clinic opens"}, log_mid_sentence,
              {"event": "keel.token", "text": " at 7 am."}]
    final = {"answer": "The clinic opens at 7 am.", "status": "success", "sources": []}
    try:
        chat(StreamingGraph(events, final), term, terminal_size=(COLUMNS, LINES))
    finally:
        logger.removeHandler(handler)
    assert seen["screen"] == ["you> Who built the lighthouse?",
                              "WARNING keel.answer: the chat model failed; retrying",
                              "keel> The clinic opens"]
    assert rows(term.screen()) == ["you> Who built the lighthouse?",
                                   "WARNING keel.answer: the chat model failed; retrying",
                                   "keel> The clinic opens at 7 am."]


def test_a_draft_wrapped_over_several_rows_and_wide_characters_is_erased_whole():
    draft = "The lighthouse at 東京 was built by Gustave Eiffel, who also drew the harbour plans in Paris."
    events = [{"event": "keel.token", "text": word + " "} for word in draft.split()]
    events += [{"event": "keel.continuation", "text": "…continuing"}, {"event": "keel.token", "text": "More."},
               {"event": "keel.discard", "attempt": 1, "reason": "ungrounded"}]
    term = Terminal()
    chat(StreamingGraph(events), term, terminal_size=(20, LINES))
    shown = rows(term.screen(20, LINES))
    assert shown[0] == "you> Who built the l" and "Eiffel" not in "".join(shown) and "東京" not in "".join(shown)
    assert "".join(shown[2:]).startswith("keel> Mara Holt built it [Source 1].")


def test_a_draft_taller_than_the_screen_leaves_nothing_behind_in_the_scrollback():
    draft = " ".join(f"Line {n} of a rambling draft about Eiffel." for n in range(40))
    events = [{"event": "keel.token", "text": draft[i:i + 7]} for i in range(0, len(draft), 7)]
    events.append({"event": "keel.discard", "attempt": 1, "reason": "ungrounded"})
    term = Terminal()
    chat(StreamingGraph(events), term, terminal_size=(COLUMNS, 8))
    screen = term.screen(COLUMNS, 8, history=True)
    assert not [row for row in history_rows(screen) + rows(screen) if "Eiffel" in row]
    assert "keel> Mara Holt built it [Source 1]." in rows(screen)


def test_model_output_cannot_move_the_cursor_or_restyle_the_terminal():
    events = [{"event": "keel.token", "text": "Mara\033[2J Holt\r built\x07 it."}]
    final = {"answer": "Mara Holt built it.", "status": "success", "sources": []}
    term = Terminal()
    chat(StreamingGraph(events, final), term, terminal_size=(COLUMNS, LINES))
    assert "\033[2J" not in term.getvalue() and "\x07" not in term.getvalue()


def test_an_empty_line_asks_again_and_a_question_too_long_says_why():
    err, out = io.StringIO(), io.StringIO()
    pending = ["", "   ", "x" * 41, "Who built it?"]

    def typed(prompt=""):
        if not pending:
            raise EOFError
        return pending.pop(0)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.input", typed)
        code = chat_loop(StreamingGraph([]), {}, "conv-1", out=out, err=err, max_question_chars=40, stdin=Terminal())
    assert code == 0 and not pending  # empty lines did not end the conversation
    assert "keel chat: the question is longer than 40 characters" in err.getvalue()
    assert out.getvalue().count("keel> ") == 1  # one turn ran: the real question


def test_what_the_search_found_is_a_note_until_the_drafts_first_words():
    from keel.cli.chat import Draft

    draft = Draft()
    assert draft.apply({"event": "keel.progress", "stage": "found", "passages": 3,
                        "sources": ["docs/policy.pdf", "faq.md"]})
    assert draft.note == "[found 3 passage(s) in policy.pdf, faq.md; checking…]" and draft.text == ""
    assert draft.apply({"event": "keel.token", "text": "The claim"}) and draft.note == ""
    assert not draft.apply({"event": "keel.progress", "stage": "found", "passages": 1, "sources": []})
