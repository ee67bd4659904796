"""Token-bounded splitting at word boundaries, using the fast tokenizer's offset mappings.

The text is tokenized once (in windows, because fast tokenizers slow down badly on one huge
string); tokens are grouped into *word units* (runs of tokens with no whitespace between them, so
"unbelievable," is one unit), and chunks are packed from whole units. A chunk therefore never
exceeds ``chunk_size`` tokens and never ends inside a word; the only exception is a single "word"
longer than the limit (a URL, a base64 blob), which is cut at token boundaries.
Issue 3 grows this into the full Adaptive Token Boundary splitter.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_text_splitters import TextSplitter

DEFAULT_TOKENIZE_WINDOW_CHARS = 100_000


@dataclass(frozen=True)
class WordUnits:
    """Word units of one text: unit i spans ``text[starts[i]:ends[i]]`` and holds tokens
    ``cum[i]`` .. ``cum[i + 1]`` (so ``cum[j] - cum[i]`` counts the tokens of units i..j-1)."""

    starts: list[int]
    ends: list[int]
    cum: list[int]

    def __len__(self) -> int:
        return len(self.starts)

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Character span of units ``first .. stop-1``."""
        return self.starts[first], self.ends[stop - 1]

    def tokens(self, first: int, stop: int) -> int:
        return self.cum[stop] - self.cum[first]


def pack_units(units: WordUnits, lo: int, hi: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of units ``lo .. hi-1`` into ranges of at most ``size`` tokens; each range
    after the first starts with up to ``overlap`` tokens of whole units from the previous one."""
    cum = units.cum
    ranges: list[tuple[int, int]] = []
    start = lo
    while start < hi:
        stop = max(start + 1, bisect_right(cum, cum[start] + size, start + 1, hi + 1) - 1)
        ranges.append((start, stop))
        if stop >= hi:
            break
        overlap_start = bisect_left(cum, cum[stop] - overlap, start + 1, stop + 1)
        room_for_next = bisect_left(cum, cum[stop + 1] - size, start + 1, stop + 1)
        start = max(overlap_start, room_for_next)
    return ranges


def _untruncated_copy(backend: Any) -> Any:
    """A private copy of the Rust tokenizer without the truncation / padding that tokenizer.json
    may carry (all-MiniLM-L6-v2 truncates at 128), so every token of a long text is seen."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


class TokenBoundarySplitter(TextSplitter):
    """A LangChain TextSplitter counting ``chunk_size`` / ``chunk_overlap`` in tokens of
    ``tokenizer`` (a transformers fast tokenizer; None = the default embedding model's)."""

    def __init__(
        self,
        chunk_size: int = 150,
        chunk_overlap: int = 20,
        tokenizer: Any = None,
        *,
        tokenize_window_chars: int = DEFAULT_TOKENIZE_WINDOW_CHARS,
        **kwargs: Any,
    ):
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1 token, got {chunk_size}")
        if chunk_overlap < 0:
            raise ValueError(f"chunk_overlap must not be negative, got {chunk_overlap}")
        if tokenizer is None:
            from models.embeddings import get_embedding_tokenizer

            tokenizer = get_embedding_tokenizer()
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError("TokenBoundarySplitter needs a fast (Rust) tokenizer for offset mappings")
        self.tokenizer = tokenizer
        self._backend = _untruncated_copy(backend)
        self._window = max(1, tokenize_window_chars)
        kwargs.setdefault("length_function", self.count_tokens)
        super().__init__(chunk_size=chunk_size, chunk_overlap=chunk_overlap, **kwargs)

    # --- tokenization ------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (what the limits count)."""
        return len(self._backend.encode(text, add_special_tokens=False).ids) if text else 0

    def _windows(self, text: str) -> list[int]:
        """Window start positions, cut at whitespace so no word is split between windows."""
        bounds = [0]
        while len(text) - bounds[-1] > self._window:
            begin = bounds[-1]
            end = begin + self._window
            cut = max(text.rfind(" ", begin + 1, end), text.rfind("\n", begin + 1, end))
            bounds.append(cut if cut > begin else end)
        return bounds

    def _token_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        bounds = self._windows(text)
        pieces = [text[a:b] for a, b in zip(bounds, [*bounds[1:], len(text)])]
        encodings = self._backend.encode_batch(pieces, add_special_tokens=False)
        starts: list[int] = []
        ends: list[int] = []
        for base, encoding in zip(bounds, encodings):
            for begin, end in encoding.offsets:
                if end > begin:  # skip zero-width (special / normalized-away) tokens
                    starts.append(begin + base)
                    ends.append(end + base)
        return np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)

    def word_units(self, text: str, max_unit_tokens: int | None = None) -> WordUnits:
        """Group tokens into word units; units longer than ``max_unit_tokens`` are cut."""
        limit = max_unit_tokens or self._chunk_size
        starts, ends = self._token_offsets(text)
        count = len(starts)
        if count == 0:
            return WordUnits([], [], [0])
        new_unit = np.ones(count, dtype=bool)
        new_unit[1:] = starts[1:] > ends[:-1]
        joined = np.flatnonzero(~new_unit)
        if len(joined):  # tokenizers whose tokens carry their leading space (metaspace, byte-level)
            new_unit[joined] = [text[int(starts[i])].isspace() for i in joined]
        first = np.flatnonzero(new_unit)
        sizes = np.diff(np.append(first, count))
        for unit in np.flatnonzero(sizes > limit):
            new_unit[np.arange(first[unit] + limit, first[unit] + sizes[unit], limit)] = True
        if (sizes > limit).any():
            first = np.flatnonzero(new_unit)
        last = np.append(first[1:], count) - 1
        return WordUnits(starts[first].tolist(), ends[last].tolist(), [*first.tolist(), count])

    # --- splitting ---------------------------------------------------------------------------
    def split_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans ``(start, end)`` of the chunks of ``text``."""
        units = self.word_units(text)
        ranges = pack_units(units, 0, len(units), self._chunk_size, self._chunk_overlap)
        return [units.span(first, stop) for first, stop in ranges]

    def split_text(self, text: str) -> list[str]:
        chunks = (text[start:end] for start, end in self.split_spans(text))
        if self._strip_whitespace:
            return [chunk.strip() for chunk in chunks if chunk.strip()]
        return [chunk for chunk in chunks if chunk]
