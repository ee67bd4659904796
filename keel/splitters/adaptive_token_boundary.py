"""The Adaptive Token Boundary splitter: token-counted chunks cut at word boundaries.

How it works, and why:

* The text is tokenized **once** with the embedding model's fast (Rust) tokenizer: its offset
  mappings say where each token sits (or, for tokenizers that split on whitespace first, each
  distinct word's count is reused: ``splitters.token_units``). Chunk sizes are therefore counted
  in the tokens the embedding model really sees, and no chunk is re-tokenized to be measured.
* Tokens are grouped into *word units* (runs of tokens with no whitespace between them, so
  "unbelievable," is one unit) and chunks are packed from whole units: a chunk never exceeds
  ``chunk_size`` tokens and never ends inside a word. The only exception is a single "word" longer
  than the limit (a URL, a base64 blob), which is cut at token boundaries.
* Long texts are **streamed**: tokenized a block at a time, in windows cut at whitespace (fast
  tokenizers slow down badly on one huge string). Chunks are emitted as soon as they are final; the
  last two stay *pending* until the next block arrives, so memory is bounded by a block whatever
  the text's length.
* A too-small trailing piece is merged into its neighbour: the last two chunks are re-cut evenly
  instead of leaving a sliver of a few tokens (which embeds poorly) at the end of a text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from keel.core.settings.ingestion import IngestionSettings
from keel.splitters.token_units import UnitArrays, UnitTokenizer


@dataclass(frozen=True)
class WordUnits:
    """Word units of one text: unit i spans ``text[starts[i]:ends[i]]`` and holds tokens
    ``cum[i]`` .. ``cum[i + 1]`` (so ``cum[j] - cum[i]`` counts the tokens of units i..j-1).

    Units are Python's words, so a chunk may end at whitespace the tokenizer glues words across
    (a U+001C separator that BERT removes). Inside a chunk such a gap joins its neighbours into one
    word whose tokens differ from the two words' sum, so ranges holding one are re-counted exactly:
    ``glued[i]`` counts such gaps before unit i, ``recount(start, end)`` tokenizes a span."""

    starts: list[int]
    ends: list[int]
    cum: list[int]
    glued: list[int] | None = None
    recount: Callable[[int, int], int] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Character span of units ``first .. stop-1``."""
        return self.starts[first], self.ends[stop - 1]

    def tokens(self, first: int, stop: int) -> int:
        return self.cum[stop] - self.cum[first]

    def fits(self, first: int, stop: int, limit: int) -> bool:
        """Whether units ``first .. stop-1`` as one chunk hold at most ``limit`` tokens."""
        if self.tokens(first, stop) > limit:
            return False
        if self.glued is None or stop - first < 2 or self.glued[stop - 1] == self.glued[first]:
            return True
        return self.recount(*self.span(first, stop)) <= limit

    @classmethod
    def from_arrays(cls, units: UnitArrays, text: str | None = None, tokenizer: UnitTokenizer | None = None) -> WordUnits:
        """``text`` and ``tokenizer`` (when given) find the gaps the tokenizer glues words across."""
        cum = np.zeros(len(units) + 1, dtype=np.int64)
        np.cumsum(units.counts, out=cum[1:])
        glued = None
        if text is not None and tokenizer is not None and len(units) > 1:
            begin, end = int(units.starts[0]), int(units.ends[-1])
            if tokenizer.has_disagreeing_space(text, begin, end):
                positions = [m.start() for m in tokenizer.disagreeing.finditer(text, begin, end)]
                after = np.searchsorted(units.starts, positions, side="right")  # the unit each gap precedes
                gaps = np.zeros(len(units), dtype=np.int64)
                np.add.at(gaps, after[after < len(units)], 1)
                glued = np.cumsum(gaps > 0).tolist()
        recount = (lambda start, end: tokenizer.count_tokens(text[start:end])) if glued else None
        return cls(units.starts.tolist(), units.ends.tolist(), cum.tolist(), glued, recount)


def _next_start(cum: list[int], start: int, stop: int, size: int, overlap: int) -> int:
    """Where the chunk after ``[start, stop)`` begins: up to ``overlap`` tokens of whole units
    back from ``stop``, but never so far back that the next unit would not fit beside them."""
    overlap_start = bisect_left(cum, cum[stop] - overlap, start + 1, stop + 1)
    room_for_next = bisect_left(cum, cum[stop + 1] - size, start + 1, stop + 1)
    return max(overlap_start, room_for_next)


def pack_units(units: WordUnits, lo: int, hi: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of units ``lo .. hi-1`` into ranges of at most ``size`` tokens; each range
    after the first starts with up to ``overlap`` tokens of whole units from the previous one."""
    cum = units.cum
    ranges: list[tuple[int, int]] = []
    start, previous_stop = lo, lo
    while start < hi:
        stop = max(start + 1, bisect_right(cum, cum[start] + size, start + 1, hi + 1) - 1)
        while not units.fits(start, stop, size):  # only a range gluing words across odd whitespace
            if stop - 1 > max(start, previous_stop):
                stop -= 1  # give up a new unit, but keep at least one
            else:
                start += 1  # give up overlap instead
        ranges.append((start, stop))
        if stop >= hi:
            break
        previous_stop = stop
        start = _next_start(cum, start, stop, size, overlap)
        while start < stop and not units.fits(start, stop, overlap):
            start += 1
    return ranges


def merge_small_tail(
    units: WordUnits, ranges: list[tuple[int, int]], size: int, overlap: int, min_new_tokens: int
) -> list[tuple[int, int]]:
    """When the last range adds fewer than ``min_new_tokens`` tokens, re-cut the last two ranges
    so they are as even as the limits allow (same size limit, same overlap rule)."""
    if len(ranges) < 2 or min_new_tokens <= 0:
        return ranges
    cum = units.cum
    (first, prev_stop), (_, hi) = ranges[-2], ranges[-1]
    if cum[hi] - cum[prev_stop] >= min_new_tokens:
        return ranges
    best = (abs(units.tokens(first, prev_stop) - units.tokens(ranges[-1][0], hi)), prev_stop, ranges[-1][0])
    for stop in range(prev_stop - 1, first, -1):
        start = _next_start(cum, first, stop, size, overlap)
        tail = cum[hi] - cum[start]
        if tail > size:
            break
        gap = abs(cum[stop] - cum[first] - tail)
        if gap < best[0] and units.fits(first, stop, size) and units.fits(start, hi, size) \
                and units.fits(start, stop, overlap):
            best = (gap, stop, start)
    _, stop, start = best
    return [*ranges[:-2], (first, stop), (start, hi)]


class AdaptiveTokenBoundarySplitter(TextSplitter):
    """A LangChain TextSplitter counting ``chunk_size`` / ``chunk_overlap`` in tokens of
    ``tokenizer`` (a transformers fast tokenizer; None = the default embedding model's, exposed
    as ``.tokenizer``). ``split_text`` returns chunks; ``split_spans`` / ``lazy_split_spans``
    return their ``(start, end)`` character offsets in the text."""

    def __init__(
        self,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        tokenizer: Any = None,
        *,
        tokenize_window_chars: int | None = None,
        windows_per_block: int | None = None,
        min_tail_fraction: float | None = None,
        word_counts: bool | None = None,
        **kwargs: Any,
    ):
        """Every size left as None comes from ``IngestionSettings()`` (child_chunk_tokens,
        child_chunk_overlap, splitter_*), the one source of truth. ``word_counts``: None = reuse
        distinct words' counts when the tokenizer allows it (exact), False = always use offsets."""
        defaults = IngestionSettings()
        chunk_size = defaults.child_chunk_tokens if chunk_size is None else chunk_size
        chunk_overlap = defaults.child_chunk_overlap if chunk_overlap is None else chunk_overlap
        if tokenize_window_chars is None:
            tokenize_window_chars = defaults.splitter_window_chars
        if windows_per_block is None:
            windows_per_block = defaults.splitter_windows_per_block
        if min_tail_fraction is None:
            min_tail_fraction = defaults.splitter_min_tail_fraction
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1 token, got {chunk_size}")
        if chunk_overlap < 0:
            raise ValueError(f"chunk_overlap must not be negative, got {chunk_overlap}")
        if not 0 <= min_tail_fraction <= 1:
            raise ValueError(f"min_tail_fraction must be between 0 and 1, got {min_tail_fraction}")
        if tokenizer is None:  # imported only then: a splitter given its tokenizer needs no model client
            from keel.models.embeddings import get_embedding_tokenizer

            tokenizer = get_embedding_tokenizer()
        self._units = UnitTokenizer(tokenizer, tokenize_window_chars, windows_per_block, word_counts)
        self.tokenizer = tokenizer
        self._min_tail_fraction = min_tail_fraction
        kwargs.setdefault("length_function", self.count_tokens)
        super().__init__(chunk_size=chunk_size, chunk_overlap=chunk_overlap, **kwargs)

    @property
    def uses_word_counts(self) -> bool:
        return self._units.word_counts

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (what the limits count)."""
        return self._units.count_tokens(text)

    def word_units(self, text: str, max_unit_tokens: int | None = None) -> WordUnits:
        """All word units of ``text`` at once (for page-sized texts); units over
        ``max_unit_tokens`` (default ``chunk_size``) are cut at token boundaries."""
        units = UnitArrays.empty()
        for block in self._units.blocks(text, max_unit_tokens or self._chunk_size):
            units = units + block
        return WordUnits.from_arrays(units, text, self._units)

    def pack(self, units: WordUnits, first: int, stop: int, size: int, overlap: int) -> list[tuple[int, int]]:
        """Pack units ``first .. stop-1`` into chunks, merging a too-small trailing piece."""
        ranges = pack_units(units, first, stop, size, overlap)
        return merge_small_tail(units, ranges, size, overlap, int(size * self._min_tail_fraction))

    # --- streaming ---------------------------------------------------------------------------
    def lazy_split_units(
        self, text: str, size: int | None = None, overlap: int | None = None, max_unit_tokens: int | None = None
    ) -> Iterator[tuple[WordUnits, int, int]]:
        """Stream ``(units, first, stop)``: each chunk as units ``first .. stop-1`` of ``units``
        (a block's word units, offsets into ``text``). ``size`` / ``overlap`` default to the
        splitter's; ``max_unit_tokens`` (default ``size``) caps a single unit, so a caller packing
        smaller chunks inside these ones (parent-child) can pass its own smaller cap."""
        size = size or self._chunk_size
        overlap = self._chunk_overlap if overlap is None else overlap
        min_tail = int(size * self._min_tail_fraction)
        pending = UnitArrays.empty()
        blocks = self._units.blocks(text, max_unit_tokens or size)
        block = next(blocks, None)
        while block is not None:
            following = next(blocks, None)
            arrays = pending + block
            units = WordUnits.from_arrays(arrays, text, self._units)
            ranges = pack_units(units, 0, len(units), size, overlap)
            if following is None:
                for first, stop in merge_small_tail(units, ranges, size, overlap, min_tail):
                    yield units, first, stop
                return
            for first, stop in ranges[:-2]:  # the last two may still grow or be re-cut: pending
                yield units, first, stop
            pending = arrays.tail(ranges[-2][0] if len(ranges) >= 2 else 0)
            block = following

    def lazy_split_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Character spans ``(start, end)`` of the chunks, in order, as they are found."""
        for units, first, stop in self.lazy_split_units(text):
            yield units.span(first, stop)

    def split_spans(self, text: str) -> list[tuple[int, int]]:
        return list(self.lazy_split_spans(text))

    def lazy_split_text(self, text: str) -> Iterator[str]:
        for start, end in self.lazy_split_spans(text):
            yield text[start:end]

    def split_text(self, text: str) -> list[str]:
        return list(self.lazy_split_text(text))

    def create_documents(self, texts: list[str], metadatas: list[dict] | None = None) -> list[Document]:
        """As LangChain's, but ``start_index`` comes from the real offsets (never ``str.find``)."""
        return list(self.lazy_create_documents(texts, metadatas))

    def lazy_create_documents(self, texts: Iterable[str], metadatas: Iterable[dict] | None = None) -> Iterator[Document]:
        metadatas = metadatas if metadatas is not None else ({} for _ in iter(int, 1))
        for text, metadata in zip(texts, metadatas, strict=False):
            for start, end in self.lazy_split_spans(text):
                meta = dict(metadata)
                if self._add_start_index:
                    meta["start_index"] = start
                yield Document(page_content=text[start:end], metadata=meta)
