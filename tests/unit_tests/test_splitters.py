"""The Adaptive Token Boundary splitter, parent-child and mixed-content chunking, and n-gram
hints, with the embedding model's real tokenizer."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document

from keel.loaders.base import inheritable_metadata
from keel.models.embeddings import get_embedding_tokenizer
from keel.splitters import (
    AdaptiveTokenBoundarySplitter,
    MixedContentSplitter,
    NgramImportance,
    ParentChildSplitter,
)
from keel.splitters.ngram_hints import font_weights
from keel.stores.chunk_store import EMBEDDING_TEXT_KEY
from tests.property_budget import examples

WORDS = [
    "the", "lighthouse", "unbelievable", "astonishingly", "cats", "reading", "Mara", "Holt's",
    "1874", "nautical", "miles,", "(red", "white)", "e-mail", "co-operate", "naïve", "café.",
    "Straße", "日本語", "x", "I", "a.b.c", "http://example.com/a?b=c", "—", "don't", "well-known;",
]


@pytest.fixture(scope="module")
def tokenizer():
    return get_embedding_tokenizer()


def _count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _is_gap(char: str) -> bool:
    """Whitespace, or a control character the tokenizer removes (it joins nothing)."""
    return char.isspace() or unicodedata.category(char).startswith("C")


def _splits_for_the_tokenizer(char: str) -> bool:
    """BERT's whitespace: other control characters are removed, so they glue their neighbours."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _inside_an_overlong_word(tokenizer, text: str, edge: int, size: int) -> bool:
    """The documented exception: a word the tokenizer sees as one, longer than the limit, is cut
    at token boundaries ("c\x1cunbelievable" is one word to BERT: \x1c is removed, not a space)."""
    lo, hi = edge, edge
    while lo > 0 and not _splits_for_the_tokenizer(text[lo - 1]):
        lo -= 1
    while hi < len(text) and not _splits_for_the_tokenizer(text[hi]):
        hi += 1
    return _count(tokenizer, text[lo:hi]) > size


def _assert_word_boundaries(text: str, spans: list[tuple[int, int]], tokenizer=None, size: int = 0) -> None:
    """No chunk edge inside a word, unless (given ``tokenizer``) the word is over ``size`` tokens."""
    for start, end in spans:
        for edge, inside, where in ((start, start > 0 and not _is_gap(text[start - 1]), "starts"),
                                    (end, end < len(text) and not _is_gap(text[end]), "ends")):
            if inside and not (tokenizer and _inside_an_overlong_word(tokenizer, text, edge, size)):
                raise AssertionError(f"chunk {where} inside a word: {text[edge - 5:edge + 5]!r}")


texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=400).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n\n", "\xa0", "\u3000", " \x0c", "\u2028", "\x1c", ""]),
             min_size=len(words), max_size=len(words)).map(
        lambda seps: "".join(w + s for w, s in zip(words, seps))
    )
)


def _glued(separator: str) -> str:
    """A word pair joined by ``separator``, then plain words: the chunk edge falls at the separator."""
    return f"http://example.com/a?b=c{separator}astonishingly the the the the the the the "


# Whitespace to Python's str.split() but not to the tokenizer: the next chunk must still repeat the
# previous chunk's last word. Found by hypothesis (U+001C), then pinned for every class of such
# character: information separators U+001C..U+001F, next line U+0085, vertical tab and form feed,
# and, as controls the tokenizer does split on, the line / paragraph separators and no-break spaces.
@example(text=_glued("\x1c"), size=16, overlap_fraction=0.5, window=40, word_counts=False)
@example(text=_glued("\x1f"), size=16, overlap_fraction=0.5, window=40, word_counts=True)
@example(text=_glued("\x85"), size=16, overlap_fraction=0.5, window=97, word_counts=False)
@example(text=_glued("\x0b"), size=16, overlap_fraction=0.5, window=1000, word_counts=True)
@example(text=_glued("\x0c"), size=16, overlap_fraction=0.5, window=40, word_counts=False)
@example(text=_glued("\u2028"), size=16, overlap_fraction=0.5, window=40, word_counts=False)
@example(text=_glued("\u2029"), size=16, overlap_fraction=0.5, window=40, word_counts=True)
@example(text=_glued("\xa0"), size=16, overlap_fraction=0.5, window=40, word_counts=False)
@example(text=_glued("\u3000"), size=16, overlap_fraction=0.5, window=40, word_counts=True)
@settings(max_examples=examples(80), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    text=texts,
    size=st.integers(min_value=16, max_value=60),
    overlap_fraction=st.floats(0, 0.5),
    window=st.sampled_from([40, 97, 1000, 100_000]),
    word_counts=st.booleans(),
)
def test_chunks_never_exceed_the_limit_nor_cut_words_and_cover_the_text(
    tokenizer, text, size, overlap_fraction, window, word_counts
):
    overlap = int(size * overlap_fraction)
    splitter = AdaptiveTokenBoundarySplitter(
        size, overlap, tokenizer, tokenize_window_chars=window, windows_per_block=2, word_counts=word_counts
    )
    assert splitter.uses_word_counts == word_counts
    spans = splitter.split_spans(text)
    chunks = splitter.split_text(text)
    _assert_chunks_map_back_in_order(text, chunks)
    assert len(chunks) == len(spans)
    for start, end in spans:
        assert _count(tokenizer, text[start:end]) <= size
    _assert_word_boundaries(text, spans, tokenizer, size)
    assert [s for s, _ in spans] == sorted({s for s, _ in spans}), "chunks go forward, no duplicates"
    covered = set()
    for start, end in spans:
        covered.update(range(start, end))
    assert all(i in covered for i, ch in enumerate(text) if not _is_gap(ch)), "every word is in some chunk"
    for (_, prev_end), (start, _) in zip(spans, spans[1:]):
        shared = text[start:prev_end] if start < prev_end else ""
        assert _count(tokenizer, shared) <= overlap
    _assert_overlap_where_it_fits(tokenizer, text, chunks, spans, size, overlap)


def _assert_chunks_map_back_in_order(text: str, chunks: list[str]) -> None:
    """Each chunk's text is found in the source, each one further on than the one before."""
    position = -1
    for index, chunk in enumerate(chunks):
        found = text.find(chunk, position + 1)
        assert found >= 0, f"chunk {index} is not in the source after chunk {index - 1}: {chunk[:40]!r}"
        position = found


def _assert_overlap_where_it_fits(tokenizer, text, chunks, spans, size, overlap) -> None:
    """With overlap, consecutive chunks share words: the next chunk starts with the previous one's
    last word whenever that word fits the overlap, and beside the next new word fits the limit."""
    if overlap == 0 or len(chunks) < 2:
        return
    for (previous, current), (_, end) in zip(zip(chunks, chunks[1:]), spans):
        words, rest = previous.split(), text[end:].split()
        if len(words) < 2 or not rest or (end < len(text) and not text[end].isspace()):
            continue  # a one-word chunk, the text's end, or a cut over-long word: nothing must repeat
        last, following = _count(tokenizer, words[-1]), _count(tokenizer, rest[0])
        if 0 < last <= overlap and last + following <= size:
            shared = next((k for k in range(len(words), 0, -1) if current.split()[:k] == words[-k:]), 0)
            assert shared >= 1, f"no overlap between {previous[-30:]!r} and {current[:30]!r}"


def test_no_size_cuts_a_word_of_a_fixed_text(tokenizer):
    text = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(400))
    for size in range(16, 64, 3):
        for overlap in (0, size // 4):
            splitter = AdaptiveTokenBoundarySplitter(size, overlap, tokenizer)
            spans, chunks = splitter.split_spans(text), splitter.split_text(text)
            assert len(spans) > 1
            _assert_word_boundaries(text, spans)
            _assert_chunks_map_back_in_order(text, chunks)
            _assert_overlap_where_it_fits(tokenizer, text, chunks, spans, size, overlap)
            assert max(_count(tokenizer, text[a:b]) for a, b in spans) <= size


def test_overlap_repeats_the_tail_of_the_previous_chunk(tokenizer):
    text = " ".join(f"word{i}" for i in range(200))
    chunks = AdaptiveTokenBoundarySplitter(30, 10, tokenizer).split_text(text)
    assert len(chunks) > 3
    for previous, current in zip(chunks, chunks[1:]):
        first_word = current.split()[0]
        assert first_word in previous.split(), "the next chunk starts inside the previous one"
        assert current.split()[0] != previous.split()[0]


def test_word_longer_than_the_limit_is_cut_at_token_boundaries_only(tokenizer):
    long_word = "-".join(["abc"] * 40)  # one whitespace-free "word" of ~80 tokens
    text = f"start {long_word} end"
    splitter = AdaptiveTokenBoundarySplitter(16, 0, tokenizer)
    chunks = splitter.split_text(text)
    assert all(_count(tokenizer, chunk) <= 16 for chunk in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")


def test_tokenizing_in_windows_gives_the_same_chunks(tokenizer):
    text = " ".join(WORDS * 40)
    whole = AdaptiveTokenBoundarySplitter(50, 10, tokenizer).split_spans(text)
    windowed = AdaptiveTokenBoundarySplitter(50, 10, tokenizer, tokenize_window_chars=97).split_spans(text)
    assert whole == windowed


def test_counts_every_token_of_long_texts(tokenizer):
    """tokenizer.json of all-MiniLM-L6-v2 truncates at 128 tokens; the splitter must not."""
    text = " ".join(["lighthouse"] * 1000)
    splitter = AdaptiveTokenBoundarySplitter(100, 0, tokenizer)
    assert splitter.count_tokens(text) == 1000
    assert len(splitter.split_text(text)) == 10


def test_is_a_langchain_text_splitter(tokenizer):
    docs = AdaptiveTokenBoundarySplitter(10, 0, tokenizer).create_documents(["one two three"], [{"source": "a.txt"}])
    assert [d.page_content for d in docs] == ["one two three"]
    assert docs[0].metadata == {"source": "a.txt"}
    with pytest.raises(ValueError):
        AdaptiveTokenBoundarySplitter(10, 20, tokenizer)


def _page(text: str, page: int, user: str = "u1", doc: str = "d" * 24, total: int = 2) -> Document:
    meta = inheritable_metadata(
        user_id=user, conversation_id="c1", source="f.pdf", doc_id=doc, page=page, total_pages=total
    )
    return Document(page_content=text, metadata=meta)


def test_parent_child_chunks_stay_inside_pages_and_parents(tokenizer):
    pages = [_page(" ".join(f"alpha{i}" for i in range(300)), 1), _page(" ".join(f"beta{i}" for i in range(50)), 2)]
    splitter = ParentChildSplitter(parent_chunk_tokens=200, child_chunk_tokens=40, child_chunk_overlap=8, tokenizer=tokenizer)
    parents, children = splitter.split_documents(pages)
    by_id = {p.id: p for p in parents}
    assert len({p.id for p in parents}) == len(parents)
    for parent in parents:
        assert _count(tokenizer, parent.page_content) <= 200
        assert not ("alpha" in parent.page_content and "beta" in parent.page_content), "a parent crossed a page"
    for child in children:
        parent = by_id[child.metadata["parent_id"]]
        assert _count(tokenizer, child.page_content) <= 40
        assert child.page_content in parent.page_content
        assert child.metadata["page"] == parent.metadata["page"]
        assert child.metadata["source"] == "f.pdf" and child.metadata["conversation_id"] == "c1"
    assert [c.metadata["chunk_index"] for c in children] == list(range(len(children)))
    assert [p.metadata["chunk_index"] for p in parents] == list(range(len(parents)))
    assert {p.metadata["page"] for p in parents} == {1, 2}


def test_chunk_ids_are_deterministic_and_differ_per_user(tokenizer):
    splitter = ParentChildSplitter(100, 20, 5, tokenizer)
    text = " ".join(f"w{i}" for i in range(120))
    first = splitter.split_documents([_page(text, 1)])
    again = splitter.split_documents([_page(text, 1)])
    other_user = splitter.split_documents([_page(text, 1, user="u2")])
    assert [c.id for c in first[1]] == [c.id for c in again[1]]
    assert not {c.id for c in first[1]} & {c.id for c in other_user[1]}


def test_empty_pages_give_no_chunks_and_missing_metadata_is_an_error(tokenizer):
    splitter = ParentChildSplitter(100, 20, 5, tokenizer)
    assert splitter.split_documents([_page("   \n ", 1)]) == ([], [])
    with pytest.raises(ValueError, match="doc_id"):
        splitter.split_documents([Document(page_content="text", metadata={"user_id": "u"})])
    with pytest.raises(ValueError, match="must not exceed"):
        ParentChildSplitter(50, 100, 5, tokenizer)


# --- the public API of the Adaptive Token Boundary splitter ------------------------------------
def test_default_tokenizer_is_the_embedding_models_and_is_exposed(tokenizer):
    splitter = AdaptiveTokenBoundarySplitter(chunk_size=40, chunk_overlap=5)
    assert splitter.tokenizer is tokenizer
    assert splitter.split_text("the lighthouse keeper") == ["the lighthouse keeper"]
    with pytest.raises(ValueError, match="fast"):
        AdaptiveTokenBoundarySplitter(10, 0, tokenizer=object())


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=texts, size=st.integers(min_value=8, max_value=60))
# found by hypothesis: a tokenizing window without ASCII whitespace used to be cut inside a word
@example(text="the the the the the the the the the the the\xa0lighthouse\xa0lighthouse\xa0http://example.com/a?b=c"
              "\u2028lighthouse ", size=8)
def test_word_counts_and_offsets_give_the_same_chunks(tokenizer, text, size):
    """Reusing distinct words' counts is exact for the default (WordPiece) tokenizer."""
    fast = AdaptiveTokenBoundarySplitter(size, size // 5, tokenizer, tokenize_window_chars=60, windows_per_block=2)
    exact = AdaptiveTokenBoundarySplitter(size, size // 5, tokenizer, word_counts=False)
    assert fast.uses_word_counts and not exact.uses_word_counts
    assert fast.split_spans(text) == exact.split_spans(text)


class _CountingBackend:
    """Counts the Rust tokenizer's encode / encode_batch calls and the characters they were given."""

    def __init__(self, inner):
        self.inner, self.calls, self.chars = inner, 0, 0

    def encode(self, text, *args, **kwargs):
        self.calls, self.chars = self.calls + 1, self.chars + len(text)
        return self.inner.encode(text, *args, **kwargs)

    def encode_batch(self, texts, *args, **kwargs):
        self.calls, self.chars = self.calls + 1, self.chars + sum(map(len, texts))
        return self.inner.encode_batch(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("word_counts", [True, False])
def test_the_first_chunk_comes_before_most_of_a_long_text_is_tokenized(tokenizer, word_counts):
    text = "\n".join(" ".join(f"w{i}x{j}" for j in range(20)) for i in range(20_000))  # ~2.4 MB, no repeats
    splitter = AdaptiveTokenBoundarySplitter(60, 10, tokenizer, tokenize_window_chars=2_000, windows_per_block=4,
                                             word_counts=word_counts)
    counting = _CountingBackend(splitter._units.backend)
    splitter._units.backend = counting
    stream = splitter.lazy_split_text(text)
    first = next(stream)
    calls_before, chars_before = counting.calls, counting.chars
    assert first and text.startswith(first)
    assert calls_before <= 2 and chars_before <= 2 * 8_000, "only the first block and the one after it"
    rest = sum(1 for _ in stream)
    assert rest > 1000 and counting.calls > 100 * calls_before and counting.chars > 100 * chars_before


def test_defaults_come_from_the_configuration(tokenizer):
    from keel.core.configuration import Configuration

    cfg = Configuration()
    splitter = AdaptiveTokenBoundarySplitter(tokenizer=tokenizer)
    assert (splitter._chunk_size, splitter._chunk_overlap) == (cfg.child_chunk_tokens, cfg.child_chunk_overlap)
    assert splitter._min_tail_fraction == cfg.splitter_min_tail_fraction
    assert splitter._units.window == cfg.splitter_window_chars
    pc = ParentChildSplitter(tokenizer=tokenizer)
    assert (pc.parent_chunk_tokens, pc.child_chunk_tokens, pc.child_chunk_overlap) == (
        cfg.parent_chunk_tokens, cfg.child_chunk_tokens, cfg.child_chunk_overlap)
    custom = ParentChildSplitter.from_config(Configuration(parent_chunk_tokens=90, child_chunk_tokens=30,
                                                           child_chunk_overlap=4, splitter_min_tail_fraction=0),
                                             tokenizer)
    assert (custom.parent_chunk_tokens, custom.child_chunk_tokens, custom.token_splitter._min_tail_fraction) == (90, 30, 0)
    importance = NgramImportance()
    assert (importance.max_ngrams, importance.min_count, importance.hint_repeats, importance.max_hints_per_chunk) == (
        cfg.ngram_max_important, cfg.ngram_min_count, cfg.ngram_hint_repeats, cfg.ngram_max_hints_per_chunk)


def test_streaming_in_small_blocks_gives_the_same_chunks_as_one_pass(tokenizer):
    text = "\n".join(" ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 30)) for i in range(300))
    one_pass = AdaptiveTokenBoundarySplitter(60, 12, tokenizer, tokenize_window_chars=10**9).split_spans(text)
    splitter = AdaptiveTokenBoundarySplitter(60, 12, tokenizer, tokenize_window_chars=150, windows_per_block=3)
    stream = splitter.lazy_split_spans(text)
    first = next(stream)
    assert first == one_pass[0], "the first chunk comes out before the whole text is tokenized"
    assert [first, *stream] == one_pass


def test_a_too_small_trailing_piece_is_merged_into_its_neighbour(tokenizer):
    text = " ".join(["lighthouse"] * 210)  # one token each: greedy gives 100 + 100 + 10
    count = _count(tokenizer, text)
    assert count == 210
    greedy = AdaptiveTokenBoundarySplitter(100, 0, tokenizer, min_tail_fraction=0).split_text(text)
    merged = AdaptiveTokenBoundarySplitter(100, 0, tokenizer).split_text(text)
    assert len(greedy) == len(merged) == 3
    assert _count(tokenizer, greedy[-1]) < 25, "greedy packing leaves a sliver at the end"
    tail = [_count(tokenizer, chunk) for chunk in merged[-2:]]
    assert tail == [55, 55] and sum(_count(tokenizer, c) for c in merged) == count
    assert " ".join(merged) == text


def test_create_documents_gives_true_start_indexes_even_for_repeated_text(tokenizer):
    text = "same words here. " * 40
    splitter = AdaptiveTokenBoundarySplitter(20, 5, tokenizer, add_start_index=True)
    docs = splitter.create_documents([text], [{"source": "r.txt"}])
    assert len(docs) > 3
    for doc, (start, end) in zip(docs, splitter.split_spans(text)):
        assert doc.metadata == {"source": "r.txt", "start_index": start}
        assert text[start:end] == doc.page_content


# --- n-gram importance and hints ------------------------------------------------------------------
def _runs_page(text: str, runs, page: int = 1) -> Document:
    doc = _page(text, page)
    doc.metadata["font_runs"] = runs
    return doc


def test_font_weights_compare_each_run_to_the_documents_mean_size():
    pages = [_runs_page("Title body body", [["Title", 20.0], ["body text here", 10.0]])]
    mean = (5 * 20 + 14 * 10) / 19
    weights = font_weights(pages, scaling=1.0)
    assert weights["title"] == pytest.approx(20 / mean) and weights["body"] == pytest.approx(10 / mean)
    assert font_weights(pages, scaling=2.0)["title"] == pytest.approx((20 / mean) ** 2)
    assert font_weights([_page("no runs", 1)], 1.0) == {}


def test_important_ngrams_are_collocations_and_large_font_headings():
    body = ("Each employee must join the mandatory teams before the quarterly review. " * 3
            + "The cafeteria closes at noon on Fridays. Parking permits are renewed in March. ")
    heading = "Remote Onboarding Checklist"
    page = _runs_page(f"{heading}\n{body}", [[heading, 18.0], [body, 10.0]])
    found = NgramImportance(max_ngrams=5).find([page])
    texts = [item.text for item in found]
    assert "mandatory teams" in " | ".join(texts)
    assert "remote onboarding checklist" in texts, "a heading counts even if it occurs once"
    heading_item = next(item for item in found if item.text == "remote onboarding checklist")
    assert heading_item.font_weight > 1.2 and heading_item.count == 1
    assert all(item.words[0] not in {"the", "each", "at"} for item in found), "no n-gram starts with a stopword"
    no_fonts = NgramImportance(max_ngrams=5).find([_page(f"{heading}\n{body}", 1)])
    assert "remote onboarding checklist" not in [item.text for item in no_fonts]


def test_hints_are_added_to_the_embedded_text_only():
    importance = NgramImportance(max_ngrams=3, hint_repeats=2)
    page = _page("Mandatory teams meet weekly. The mandatory teams report to Ana. Mandatory teams rotate.", 1)
    found = importance.find([page])
    hinted = importance.embedding_text("Our mandatory teams meet on Monday.", found)
    assert hinted.startswith("Our mandatory teams meet on Monday.\n")
    assert "<important>mandatory teams</important> mandatory teams" in hinted
    assert importance.embedding_text("Nothing relevant in this chunk.", found) is None
    assert NgramImportance(hint_repeats=0).embedding_text("mandatory teams", found) is None


def test_parent_child_children_with_important_ngrams_carry_an_embedding_text(tokenizer):
    text = " ".join(["The mandatory teams meet weekly in the north hall."] * 6 + [f"filler{i} words" for i in range(80)])
    splitter = ParentChildSplitter(200, 30, 5, tokenizer, importance=NgramImportance(max_ngrams=3))
    parents, children = splitter.split_documents([_runs_page(text, [[text, 10.0]])])
    hinted = [c for c in children if EMBEDDING_TEXT_KEY in c.metadata]
    plain = [c for c in children if EMBEDDING_TEXT_KEY not in c.metadata]
    assert hinted and plain
    for child in hinted:
        assert child.metadata[EMBEDDING_TEXT_KEY].startswith(child.page_content)
        assert "<important>" not in child.page_content
    assert all("font_runs" not in chunk.metadata for chunk in [*parents, *children]), "page-only metadata stays on the page"
    without = ParentChildSplitter(200, 30, 5, tokenizer).split_documents([_page(text, 1)])[1]
    assert [c.page_content for c in without] == [c.page_content for c in children]


# --- mixed content ----------------------------------------------------------------------------------
def _image_doc(page: int, index: int) -> Document:
    meta = inheritable_metadata(user_id="u1", conversation_id="c1", source="f.pdf", doc_id="d" * 24, page=page,
                                total_pages=2, multimodal_type="image", image_index=index, width=64, height=32,
                                channels=3, colour_mode="RGB", mime_type="image/png", alt_text="A lighthouse")
    return Document(page_content="iVBORw0KGgo=", metadata=meta)


def test_images_stay_whole_in_reading_order_as_their_own_chunks(tokenizer):
    pages = [_page(" ".join(f"alpha{i}" for i in range(60)), 1), _image_doc(1, 1), _page("beta gamma", 2)]
    parents, children = ParentChildSplitter(40, 20, 4, tokenizer).split_documents(pages)
    kinds = [p.metadata["multimodal_type"] for p in parents]
    image_at = kinds.index("image")
    assert kinds[:image_at] == ["text"] * image_at and kinds[image_at + 1 :] == ["text"], "reading order kept"
    image_parent = parents[image_at]
    (image_child,) = [c for c in children if c.metadata["parent_id"] == image_parent.id]
    assert image_parent.metadata["image_base64"] == "iVBORw0KGgo="
    assert image_child.page_content == image_parent.page_content
    assert image_child.page_content == "[Image 1 on page 1 of f.pdf: 64x32 pixels, RGB (3 channels) - A lighthouse]"
    assert "image_base64" not in image_child.metadata and image_child.metadata["width"] == 64
    assert [c.metadata["chunk_index"] for c in children] == list(range(len(children)))

    flat = MixedContentSplitter(AdaptiveTokenBoundarySplitter(20, 4, tokenizer)).split_documents(pages)
    assert [d.metadata["multimodal_type"] for d in flat].count("image") == 1
    assert flat[-1].page_content == "beta gamma"


def test_the_whitespace_a_tokenizer_glues_words_across_is_measured_not_listed(tokenizer):
    """BERT's normalizer removes these controls (gluing their neighbours) but splits on U+2028 and
    no-break spaces; the splitter learns that from the tokenizer itself, for any tokenizer."""
    units = AdaptiveTokenBoundarySplitter(16, 4, tokenizer)._units
    glued = {char for char in "\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u2029\u3000" if units.has_disagreeing_space(char)}
    assert glued == set("\x0b\x0c\x1c\x1d\x1e\x1f\x85")


def test_the_splitters_tokenizer_counts_as_transformers_fast_tokenizer_of_the_same_folder(tokenizer):
    """The splitter reads tokenizer.json without importing transformers (seconds per process): it
    must count exactly as transformers' fast tokenizer of that folder does, truncation and all."""
    from keel.models.embeddings import embedding_model_path
    from keel.models.tokenizer import TokenizerFile, load_auto_tokenizer

    assert isinstance(tokenizer, TokenizerFile)
    reference = load_auto_tokenizer(embedding_model_path(), use_fast=True)
    texts = [
        "The keeper lit the lamp at dusk.",
        "Ünïcödé café naïve — “quotes”, 中文, tabs\tand\u00a0no-break spaces, e-mail: a.b@c.de, ZR-200/ZR-500",
        "word " * 400,  # far past the model's 128-token truncation: every token still counted
        "",
    ]
    for text in texts:
        for special in (True, False):
            assert tokenizer(text, add_special_tokens=special)["input_ids"] == \
                reference(text, add_special_tokens=special)["input_ids"]
    assert len(tokenizer("word " * 400, add_special_tokens=False)["input_ids"]) == 400
