"""Reasoning-token filtering (template tokens, thinking lines, leak phrases), safe for streamed text.

Small models leak their scratch work: chat-template tokens, "Thinking:" lines, <thinking> blocks,
meta-commentary about the prompt. ``StreamFilter`` removes them from text that arrives in pieces
and never lets a partial marker through: a chunk ending in "<|im_" or "<think" is held back until
the next chunk shows whether it is a marker. ``strip_reasoning`` is the same filter over a whole
text (plus removal of the sentence around a meta-commentary phrase); ``find_leaks`` says which
markers a finished answer still contains (the leak rate of bench/answer_quality.py).
"""

from __future__ import annotations

import re

# Tokens dropped wherever they appear (chat templates of common small models; <answer> tags are
# not reasoning, but the user never needs to see them either).
SPECIAL_TOKENS = (
    "<end_of_instructions>", "<end_of_turn>", "<start_of_turn>", "<|im_start|>", "<|im_end|>",
    "<|endoftext|>", "<|end|>", "<|assistant|>", "<|user|>", "<|system|>", "<|eot_id|>",
    "[INST]", "[/INST]", "</s>", "<answer>", "</answer>",
)
# Blocks whose whole content is reasoning: dropped from opener to closer.
BLOCKS = (
    ("<thinking>", "</thinking>"), ("<think>", "</think>"), ("<reasoning>", "</reasoning>"),
    ("<scratchpad>", "</scratchpad>"), ("(in the context of", ")"),
)
# A line that starts with one of these is reasoning: the whole line is dropped.
LINE_MARKERS = (
    "thought process:", "thinking:", "reasoning:", "internal:", "meta:", "[thinking]", "[reasoning]",
    "thought:", "scratchpad:",
)
# Meta-commentary about the prompt or the task: never part of an answer.
PHRASE_MARKERS = (
    "okay, i need to finish", "i need to finish", "the prompt asks you", "the user has stopped",
    "provide steps involved", "so provide steps", "steps involved in developing", "based on the analysis of",
)
STRAY_CLOSERS = tuple(closer for _, closer in BLOCKS if closer.startswith("<"))

_ALL_INLINE = SPECIAL_TOKENS + tuple(opener for opener, _ in BLOCKS) + PHRASE_MARKERS + STRAY_CLOSERS
_PHRASE_RE = re.compile("|".join(r"(?<!\w)" + re.escape(p) for p in PHRASE_MARKERS), re.I)
_SENTENCE_WITH_PHRASE = re.compile(
    r"(?<![^.!?\n])[ \t]*[^.!?\n]*(?:" + "|".join(r"(?<!\w)" + re.escape(p) for p in PHRASE_MARKERS)
    + r")[^.!?\n]*[.!?]?[ \t]*",
    re.I,
)


def _word_start(text: str, position: int, previous: str) -> bool:
    before = text[position - 1] if position else previous
    return not (before.isalnum() or before == "_")


def _find_inline(lower: str, previous: str = "") -> tuple[int, str] | None:
    """Earliest marker in the (lower-cased) buffer; phrases only at a word start."""
    best: tuple[int, str] | None = None
    for marker in _ALL_INLINE:
        start = lower.find(marker.lower())
        while start >= 0 and marker in PHRASE_MARKERS and not _word_start(lower, start, previous):
            start = lower.find(marker.lower(), start + 1)
        if start >= 0 and (best is None or start < best[0] or (start == best[0] and len(marker) > len(best[1]))):
            best = (start, marker)
    return best


def _partial_marker_suffix(lower: str) -> int:
    """Length of the longest buffer suffix that could still grow into a marker."""
    longest = 0
    for marker in _ALL_INLINE:
        marker = marker.lower()
        for size in range(min(len(marker) - 1, len(lower)), longest, -1):
            if marker.startswith(lower[-size:]):
                longest = size
                break
    return longest


class StreamFilter:
    """Feed raw chunks, get back only what is safe to show. ``flush()`` at the end of the stream."""

    def __init__(self) -> None:
        self._buffer = ""
        self._closer: str | None = None  # inside a reasoning block until this closer
        self._line_start = True
        self._drop_line = False
        self._previous = ""  # the last character consumed, for word boundaries across chunks

    def feed(self, chunk: str) -> str:
        self._buffer += chunk or ""
        shown: list[str] = []
        while self._buffer:
            before = self._buffer
            progressed = self._step(shown)
            self._remember(before)
            if not progressed:
                break
        return "".join(shown)

    def _remember(self, before: str) -> None:
        consumed = len(before) - len(self._buffer)
        if consumed > 0 and self._buffer == before[consumed:]:
            self._previous = before[consumed - 1]

    def flush(self) -> str:
        shown: list[str] = []
        while self._buffer and self._step(shown, final=True):
            pass
        rest, self._buffer = self._buffer, ""
        if self._closer or self._drop_line or rest.lstrip()[:1] in ("<", "[", "("):
            rest = ""  # an unclosed reasoning block, or half a tag: never shown
        shown.append(rest)
        self._closer, self._drop_line, self._line_start = None, False, True
        return "".join(shown)

    def _step(self, shown: list[str], final: bool = False) -> bool:
        """Consume what can be decided now; False when the rest must wait for more text."""
        buffer, lower = self._buffer, self._buffer.lower()
        if self._closer is not None:
            end, size = lower.find(self._closer.lower()), len(self._closer)
            answer_opens = lower.find("<answer>") if self._closer.startswith("<") else -1
            if answer_opens >= 0 and (end < 0 or answer_opens < end):  # an answer ends the reasoning
                end, size = answer_opens, 0
            if end < 0:
                keep = max(len(self._closer), len("<answer>")) - 1
                self._buffer = buffer[-keep:]
                return False
            self._buffer, self._closer = buffer[end + size:], None
            return True
        if self._drop_line:
            newline = buffer.find("\n")
            if newline < 0:
                self._buffer = ""
                return False
            self._buffer, self._drop_line, self._line_start = buffer[newline + 1:], False, True
            return True
        if self._line_start:
            newline = buffer.find("\n")
            line = (buffer if newline < 0 else buffer[:newline]).lstrip().lower()
            if any(line.startswith(m) for m in LINE_MARKERS):
                self._drop_line = True
                return True
            could_grow = newline < 0 and any(m.startswith(line) for m in LINE_MARKERS)
            if could_grow and not final:
                return False
            self._line_start = False
            return True
        found = _find_inline(lower, self._previous)
        newline = buffer.find("\n")
        if newline >= 0 and (found is None or newline < found[0]):
            shown.append(buffer[: newline + 1])
            self._buffer, self._line_start = buffer[newline + 1:], True
            return True
        if found is not None:
            start, marker = found
            shown.append(buffer[:start])
            self._buffer = buffer[start + len(marker):]
            closer = dict(BLOCKS).get(marker)
            self._closer = closer
            return True
        hold = _partial_marker_suffix(lower)
        shown.append(buffer[: len(buffer) - hold])
        self._buffer = buffer[len(buffer) - hold:]
        return False


# The analysis lead-in: "Based on the analysis of <topic>: <answer>" keeps only the answer.
_ANALYSIS_LEAD_IN = re.compile(r"(?:^|(?<=[.!?\n]))\s*based\s+on\s+the\s+analysis\s+of\s+[^:\n]{0,200}?:\s*", re.I)


def strip_reasoning(text: str) -> str:
    """The text without reasoning markers: lead-ins and the sentence around a meta phrase go, then
    the stream filter (so the finished text agrees with what was streamed)."""
    def gap(match: re.Match) -> str:  # a removed sentence leaves a space, except at a line start
        start = match.start()
        return "" if start == 0 or match.string[start - 1] == "\n" else " "

    without_meta = _SENTENCE_WITH_PHRASE.sub(gap, _ANALYSIS_LEAD_IN.sub(gap, text or ""))
    stream = StreamFilter()
    cleaned = stream.feed(without_meta) + stream.flush()
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
    return re.sub(r"\n{3,}", "\n\n", cleaned).strip()


def find_leaks(text: str) -> list[str]:
    """The reasoning markers a (finished) answer still shows; empty for a clean answer."""
    lower = (text or "").lower()
    leaks = [m for m in SPECIAL_TOKENS + STRAY_CLOSERS if m.lower() in lower and m not in ("<answer>", "</answer>")]
    leaks += [opener for opener, _ in BLOCKS if opener.lower() in lower and opener not in leaks]
    leaks += [m.group(0).lower() for m in _PHRASE_RE.finditer(text or "")]
    for line in lower.splitlines():
        leaks += [m for m in LINE_MARKERS if line.lstrip().startswith(m)]
    return sorted(set(leaks))
