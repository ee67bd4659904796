"""Text → word units with token counts, the one tokenization the Adaptive Token Boundary splitter
does, a block of text at a time (streaming).

A *word unit* is a run of tokens with no whitespace between them ("unbelievable," is one unit).
Two exact ways to find units and their token counts, both from the embedding model's own fast
(Rust) tokenizer:

* **offsets** (any tokenizer): the block is tokenized in windows cut at whitespace, through
  ``encode_batch`` (parallel in Rust); token offset mappings give the units.
* **word counts** (tokenizers that split on whitespace before anything else and normalize
  character by character, like BERT's WordPiece of the default all-MiniLM-L6-v2): a word's tokens
  do not depend on its neighbours, so units are the whitespace-separated words and each *distinct*
  word is tokenized once and its count reused. Real text repeats its words, so this is several times
  cheaper than tokenizing everything. Blocks holding characters on which Python and the tokenizer
  disagree about whitespace fall back to offsets.

A unit longer than the caller's limit (a URL, a base64 blob) is cut at token boundaries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)
_WINDOW_CUTS = (" ", "\n", "\t", "\r", "\f", "\v")
# A window with no whitespace grows to at most this many times its size before a word is cut,
# so one huge whitespace-free string still reaches the tokenizer in bounded pieces.
_MAX_WINDOW_STRETCH = 8
# str.isspace() characters; the word-count path must split words exactly as str.split() does.
_PY_SPACES = [*range(9, 14), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
              0x202F, 0x205F, 0x3000]
_SPACE_TABLE = np.zeros(0x3001, dtype=bool)
_SPACE_TABLE[_PY_SPACES] = True
# Candidates for "whitespace to Python, not to the tokenizer": every str.isspace() character but the
# four that every tokenizer splits on. Which of them a tokenizer really disagrees about is measured
# once per tokenizer (``_disagreeing_spaces``): BERT's normalizer removes U+001C..U+001F and U+0085,
# gluing their neighbours into one word, while it treats U+00A0 as a space.
_SPACE_CANDIDATES = "".join(chr(c) for c in _PY_SPACES if chr(c) not in " \t\n\r")
_WORD_LOCAL_NORMALIZERS = {"BertNormalizer", "Lowercase", "StripAccents", "NFC", "NFD", "NFKC", "NFKD", "Sequence"}
_WHITESPACE_PRE_TOKENIZERS = {"BertPreTokenizer", "WhitespaceSplit", "Whitespace"}
_MAX_CACHED_WORDS = 1_000_000


@dataclass(frozen=True)
class UnitArrays:
    """Units of a block: unit i spans ``text[starts[i]:ends[i]]`` and holds ``counts[i]`` tokens."""

    starts: np.ndarray
    ends: np.ndarray
    counts: np.ndarray

    @classmethod
    def empty(cls) -> UnitArrays:
        return cls(_EMPTY, _EMPTY, _EMPTY)

    def __len__(self) -> int:
        return len(self.starts)

    def tail(self, first: int) -> UnitArrays:
        return UnitArrays(self.starts[first:], self.ends[first:], self.counts[first:])

    def __add__(self, other: UnitArrays) -> UnitArrays:
        return UnitArrays(*(np.concatenate([a, b]) for a, b in zip(
            (self.starts, self.ends, self.counts), (other.starts, other.ends, other.counts), strict=False)))


def _untruncated_copy(backend: Any) -> Any:
    """A private copy of the Rust tokenizer without the truncation / padding that tokenizer.json
    may carry (all-MiniLM-L6-v2 truncates at 128), so every token of a long text is seen."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


def _splits_words_independently(backend: Any) -> bool:
    spec = json.loads(backend.to_str())
    normalizer, pre_tokenizer = spec.get("normalizer"), spec.get("pre_tokenizer")
    normalizers = [normalizer] if normalizer else []
    while normalizers and normalizers[0].get("type") == "Sequence":
        normalizers = normalizers[0].get("normalizers", []) + normalizers[1:]
    return (
        bool(pre_tokenizer)
        and pre_tokenizer.get("type") in _WHITESPACE_PRE_TOKENIZERS
        and all(n.get("type") in _WORD_LOCAL_NORMALIZERS for n in normalizers)
    )


def _disagreeing_spaces(backend: Any) -> str:
    """The str.isspace() characters this tokenizer does not split words on: between two words it
    gives other tokens than a plain space does (it removes the character, gluing the words, or
    keeps it as a token of its own)."""
    reference = backend.encode("lighthouse keeper", add_special_tokens=False).ids
    return "".join(
        char for char in _SPACE_CANDIDATES
        if backend.encode(f"lighthouse{char}keeper", add_special_tokens=False).ids != reference
    )


@dataclass(frozen=True)
class _Prepared:
    tokenizer: Any
    backend: Any
    word_counts_exact: bool
    disagreeing: re.Pattern | None  # matches a character to show the tokenizer as a space
    as_spaces: dict[int, str]  # str.translate table: each disagreeing character → " "


_PREPARED: dict[int, _Prepared] = {}


def _prepared(tokenizer: Any, backend: Any) -> _Prepared:
    """The untruncated copy, whether words can be counted alone, and the whitespace this
    tokenizer disagrees about, worked out once per tokenizer object."""
    entry = _PREPARED.get(id(tokenizer))
    if entry is None or entry.tokenizer is not tokenizer:
        copy = _untruncated_copy(backend)
        chars = _disagreeing_spaces(copy)
        entry = _Prepared(
            tokenizer, copy, _splits_words_independently(copy),
            re.compile(f"[{re.escape(chars)}]") if chars else None, {ord(c): " " for c in chars},
        )
        _PREPARED[id(tokenizer)] = entry
    return entry


class UnitTokenizer:
    """Finds word units and their token counts with a fast tokenizer, block by block."""

    def __init__(self, tokenizer: Any, window_chars: int, windows_per_block: int, word_counts: bool | None = None):
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError(
                f"the Adaptive Token Boundary splitter needs a fast (Rust) tokenizer for offset mappings, "
                f"got {type(tokenizer).__name__}"
            )
        prepared = _prepared(tokenizer, backend)
        self.backend, able = prepared.backend, prepared.word_counts_exact
        self.disagreeing, self._as_spaces = prepared.disagreeing, prepared.as_spaces
        self.window = max(1, window_chars)
        self.block_chars = self.window * max(1, windows_per_block)
        self.word_counts = able if word_counts is None else (word_counts and able)
        self._cache: dict[str, int] = {}

    def has_disagreeing_space(self, text: str, begin: int = 0, end: int | None = None) -> bool:
        """Whether ``text[begin:end]`` holds whitespace this tokenizer glues words across."""
        return self.disagreeing is not None and self.disagreeing.search(text, begin, len(text) if end is None else end) is not None

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens (what the limits count)."""
        return len(self.backend.encode(text, add_special_tokens=False).ids) if text else 0

    # --- blocks ------------------------------------------------------------------------------
    def _bounds(self, text: str, begin: int, end: int, size: int) -> list[int]:
        """Cut points in ``text[begin:end]`` every ~``size`` chars, at whitespace when there is some."""
        bounds = [begin]
        while end - bounds[-1] > size:
            start = bounds[-1]
            stop = start + size
            cut = max(text.rfind(space, start + 1, stop) for space in _WINDOW_CUTS)
            if cut <= start:  # no whitespace in this window: stretch it to the next, never cut a word
                reach = min(end, start + size * _MAX_WINDOW_STRETCH)
                later = [i for i in (text.find(space, stop, reach) for space in _WINDOW_CUTS) if i != -1]
                if not later and reach == end:
                    break  # the rest is one window
                cut = min(later) if later else stop  # a run this long without whitespace is cut anyway
            bounds.append(cut)
        return [*bounds, end]

    def blocks(self, text: str, limit: int) -> Iterator[UnitArrays]:
        """Units of ``text``, a block at a time (offsets into ``text``); units over ``limit`` cut."""
        bounds = self._bounds(text, 0, len(text), self.block_chars)
        for begin, end in zip(bounds, bounds[1:], strict=False):
            units = None
            if self.word_counts and not self.has_disagreeing_space(text, begin, end):
                units = self._word_units(text, begin, end)
            if units is None:
                units = self._offset_units(text, begin, end)
            yield self._cut_long_units(text, units, limit)

    # --- the offsets way -------------------------------------------------------------------------
    def _offset_units(self, text: str, begin: int, end: int) -> UnitArrays:
        """Units from token offsets. The tokenizer is shown every whitespace character it disagrees
        about as a plain space (same length, so offsets still index ``text``): units then end
        wherever Python's str.split() ends a word, so a chunk edge there can carry overlap like any
        other. A chunk holding such a character is re-counted exactly (``WordUnits.fits``)."""
        block = text[begin:end]
        if self.has_disagreeing_space(block):
            block = block.translate(self._as_spaces)
        bounds = self._bounds(block, 0, len(block), self.window)
        pieces = [block[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        starts, ends = [], []
        for base, encoding in zip(bounds, self.backend.encode_batch(pieces, add_special_tokens=False), strict=False):
            base += begin
            offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
            keep = offsets[:, 1] > offsets[:, 0]  # drop zero-width (special / normalized-away) tokens
            starts.append(offsets[keep, 0] + base)
            ends.append(offsets[keep, 1] + base)
        if not starts:
            return UnitArrays.empty()
        return _units_from_tokens(text, begin, end, np.concatenate(starts), np.concatenate(ends))

    # --- the word-count way ----------------------------------------------------------------------
    def _word_units(self, text: str, begin: int, end: int) -> UnitArrays | None:
        block = text[begin:end]
        space = np.diff(_space_prefix(block)).astype(bool)
        edges = np.diff(np.concatenate(([True], space, [True])).astype(np.int8))
        starts = np.flatnonzero(edges == -1)
        ends = np.flatnonzero(edges == 1)
        words = block.split()
        if len(words) != len(starts):
            return None  # whitespace seen differently: let the offsets decide
        cache = self._cache
        missing = list(set(words).difference(cache))
        if missing:
            if len(cache) + len(missing) > _MAX_CACHED_WORDS:
                cache.clear()
            cache.update(zip(missing, self._count_words(missing), strict=False))
        counts = np.fromiter(map(cache.__getitem__, words), dtype=np.int64, count=len(words))
        keep = counts > 0  # words the normalizer removes entirely (control characters)
        return UnitArrays(starts[keep] + begin, ends[keep] + begin, counts[keep])

    def _count_words(self, words: list[str]) -> list[int]:
        """Token counts of distinct words, tokenized together as one space-separated text (in
        windows, in parallel): no Python object per word, and words do not affect each other."""
        joined = " ".join(words)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        word_starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
        bounds = self._bounds(joined, 0, len(joined), self.window)
        pieces = [joined[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        token_starts = [
            np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)[:, 0] + base
            for base, encoding in zip(bounds, self.backend.encode_batch(pieces, add_special_tokens=False), strict=False)
        ]
        owners = np.searchsorted(word_starts, np.concatenate(token_starts), side="right") - 1
        return np.bincount(owners, minlength=len(words)).tolist()

    def _cut_long_units(self, text: str, units: UnitArrays, limit: int) -> UnitArrays:
        """Units over ``limit`` tokens become pieces of ``limit`` tokens, cut at token offsets."""
        long = np.flatnonzero(units.counts > limit)
        if not len(long):
            return units
        starts, ends, counts = units.starts.tolist(), units.ends.tolist(), units.counts.tolist()
        for index in long[::-1].tolist():
            begin, end = starts[index], ends[index]
            offsets = [o for o in self.backend.encode(text[begin:end], add_special_tokens=False).offsets if o[1] > o[0]]
            pieces = [offsets[i : i + limit] for i in range(0, len(offsets), limit)]
            starts[index : index + 1] = [begin + piece[0][0] for piece in pieces]
            ends[index : index + 1] = [begin + piece[-1][1] for piece in pieces]
            counts[index : index + 1] = [len(piece) for piece in pieces]
        return UnitArrays(*(np.asarray(values, dtype=np.int64) for values in (starts, ends, counts)))


def _space_prefix(block: str) -> np.ndarray:
    """``prefix[i]`` = how many whitespace characters (str.isspace) ``block[:i]`` holds."""
    codes = np.frombuffer(block.encode("utf-32-le"), dtype=np.uint32)
    space = np.zeros(len(codes), dtype=bool)
    small = codes < len(_SPACE_TABLE)
    space[small] = _SPACE_TABLE[codes[small]]
    prefix = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(space, out=prefix[1:])
    return prefix


def _units_from_tokens(text: str, begin: int, end: int, starts: np.ndarray, ends: np.ndarray) -> UnitArrays:
    """Group tokens (offsets into ``text``, inside ``text[begin:end]``) into units: a token starts
    a new unit when whitespace lies between it and the previous token, or opens it (tokenizers
    whose tokens carry their leading space). Characters the normalizer drops join nothing."""
    count = len(starts)
    if count == 0:
        return UnitArrays.empty()
    prefix = _space_prefix(text[begin:end])
    new_unit = np.ones(count, dtype=bool)
    new_unit[1:] = prefix[starts[1:] - begin + 1] > prefix[ends[:-1] - begin]
    first = np.flatnonzero(new_unit)
    last = np.append(first[1:], count) - 1
    unit_starts, unit_ends = starts[first].copy(), ends[last].copy()
    _widen_over_dropped_characters(prefix, begin, end, unit_starts, unit_ends)
    return UnitArrays(unit_starts, unit_ends, np.diff(np.append(first, count)))


def _widen_over_dropped_characters(prefix: np.ndarray, begin: int, end: int, starts: np.ndarray, ends: np.ndarray) -> None:
    """Stretch units over neighbouring characters the normalizer dropped (a NUL, a direction mark)
    up to the whitespace, so a chunk edge is always at whitespace. Rare: a loop is fine."""
    def is_space(position: int) -> bool:
        return prefix[position - begin + 1] > prefix[position - begin]

    for i in np.flatnonzero((starts > begin) & (prefix[starts - begin] == prefix[np.maximum(starts - begin - 1, 0)])).tolist():
        while starts[i] > begin and not is_space(int(starts[i]) - 1):
            starts[i] -= 1
    for i in np.flatnonzero((ends < end) & (prefix[np.minimum(ends - begin + 1, end - begin)] == prefix[ends - begin])).tolist():
        while ends[i] < end and not is_space(int(ends[i])):
            ends[i] += 1
