"""The lines of a terminal that a streamed answer is drawn in, redrawn in place.

Streamed text can be taken back (a rejected attempt's draft, a dropped continuation), so what
``keel chat`` shows while the answer is being written is a *region*: the rows below the prompt,
which it erases and draws again (carriage return, cursor up over the rows it used, clear to the
end of the screen) whenever the draft changes other than by growing. A log record printed while
an answer streams pauses the region: the region is erased, the record is printed on its own
line, and the region is drawn again below it (keel/cli/logs.py), so a record never lands in the
middle of a sentence and never leaves the draft half-erased.

Rows are counted as the terminal wraps them (by character cells; a wide character takes two), and
a region taller than the screen shows only its last rows: rows that scrolled off could not be
erased any more.
"""

from __future__ import annotations

import shutil
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

DIM, RESET = "\033[2m", "\033[0m"
CURSOR_UP, CLEAR_TO_END = "\033[{}A", "\033[J"

_active: LiveRegion | None = None
_active_lock = threading.Lock()


def active_region() -> LiveRegion | None:
    """The region an answer is streaming into now, if any (for the log handler)."""
    return _active


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a closed stream is not): live updates only where a person looks."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def printable(text: str) -> str:
    """``text`` safe to draw: a tab as a space, no carriage return, escape or other control
    character (model output must not move the cursor or restyle the terminal)."""
    text = text.replace("\t", " ")
    return "".join(c for c in text if c == "\n" or unicodedata.category(c) != "Cc")


def cells(text: str) -> int:
    """How many terminal columns ``text`` (one line) takes: wide characters two, combining ones none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def screen_rows(text: str, width: int) -> list[str]:
    """``text`` cut into the rows a terminal ``width`` columns wide shows it in (it wraps by character)."""
    rows: list[str] = []
    for line in text.split("\n"):
        row, used = "", 0
        for char in line:
            size = cells(char)
            if used + size > width and row:
                rows.append(row)
                row, used = "", 0
            row, used = row + char, used + size
        rows.append(row)
    return rows


class LiveRegion:
    """A body of text (the prompt and the draft) and an optional dimmed note under it, drawn at the
    cursor and redrawn in place. Use as a context manager: on the way out the region is erased,
    whatever happened, so what follows starts where the region started."""

    def __init__(self, out: TextIO, size: tuple[int, int] | None = None):
        self.out = out
        self._size = size  # (columns, lines); None: the terminal's, asked at every draw
        self._lock = threading.RLock()
        self._body = self._note = ""
        self._rows = 0  # screen rows the region takes now (0: nothing drawn)

    def __enter__(self) -> LiveRegion:
        global _active
        with _active_lock:
            _active = self
        return self

    def __exit__(self, *exc) -> None:
        global _active
        with _active_lock:
            if _active is self:
                _active = None
        self.clear()

    def update(self, body: str, note: str = "") -> None:
        """Show ``body`` with ``note`` under it: only the new text when the body grew and there is
        no note; otherwise the region is erased and drawn again."""
        body, note = printable(body), printable(note).replace("\n", " ")
        with self._lock:
            columns, lines = self._dimensions()
            grows = self._rows and not note and not self._note and body.startswith(self._body)
            if grows and len(screen_rows(body, columns)) <= lines:
                self.out.write(body[len(self._body):])
                self._rows = len(screen_rows(body, columns))
                self._body = body
            else:
                self._erase()
                self._body, self._note = body, note
                self._draw(columns, lines)
            self.out.flush()

    def clear(self) -> None:
        """Erase the region; the cursor goes back to where it started."""
        with self._lock:
            self._erase()
            self._body = self._note = ""
            self.out.flush()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the region while the caller writes whole lines, then draw it again below them."""
        with self._lock:
            self._erase()
            self.out.flush()
            try:
                yield
            finally:
                columns, lines = self._dimensions()
                self._draw(columns, lines)
                self.out.flush()

    def _dimensions(self) -> tuple[int, int]:
        columns, lines = self._size or shutil.get_terminal_size()
        return max(1, columns), max(1, lines - 1)  # one line kept for the cursor's own row to scroll into

    def _draw(self, columns: int, lines: int) -> None:
        if not (self._body or self._note):
            return
        body_rows = screen_rows(self._body, columns)
        note_rows = screen_rows(self._note, columns) if self._note else []
        keep = max(0, lines - len(note_rows))
        body_rows = body_rows[-keep:] if keep else []  # taller than the screen: its last rows
        rows = [*body_rows, *(DIM + row + RESET for row in note_rows)][-lines:]
        # Every row is written whole and followed by a newline except the last: a terminal that has
        # just filled a row waits before wrapping, so the newline moves down exactly one row.
        self.out.write("\n".join(rows))
        self._rows = len(rows)

    def _erase(self) -> None:
        if not self._rows:
            return
        up = CURSOR_UP.format(self._rows - 1) if self._rows > 1 else ""
        self.out.write("\r" + up + CLEAR_TO_END)
        self._rows = 0
