"""The token-bounded splitter and parent-child chunking, with the embedding model's real tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document

from loaders.base import inheritable_metadata
from models.embeddings import get_embedding_tokenizer
from splitters import ParentChildSplitter, TokenBoundarySplitter

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


def _assert_word_boundaries(text: str, spans: list[tuple[int, int]]) -> None:
    for start, end in spans:
        assert start == 0 or text[start - 1].isspace(), f"chunk starts inside a word: {text[start - 5:start + 5]!r}"
        assert end == len(text) or text[end].isspace(), f"chunk ends inside a word: {text[end - 5:end + 5]!r}"


texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=400).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n\n"]), min_size=len(words), max_size=len(words)).map(
        lambda seps: "".join(w + s for w, s in zip(words, seps))
    )
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, size=st.integers(min_value=16, max_value=60), overlap_fraction=st.floats(0, 0.5))
def test_chunks_never_exceed_the_limit_nor_cut_words_and_cover_the_text(tokenizer, text, size, overlap_fraction):
    overlap = int(size * overlap_fraction)
    splitter = TokenBoundarySplitter(size, overlap, tokenizer)
    spans = splitter.split_spans(text)
    for start, end in spans:
        assert _count(tokenizer, text[start:end]) <= size
    _assert_word_boundaries(text, spans)
    assert [s for s, _ in spans] == sorted({s for s, _ in spans}), "chunks go forward, no duplicates"
    covered = set()
    for start, end in spans:
        covered.update(range(start, end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace()), "every word is in some chunk"
    for (_, prev_end), (start, _) in zip(spans, spans[1:]):
        shared = text[start:prev_end] if start < prev_end else ""
        assert _count(tokenizer, shared) <= overlap


def test_no_size_cuts_a_word_of_a_fixed_text(tokenizer):
    text = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(400))
    for size in range(16, 64, 3):
        for overlap in (0, size // 4):
            spans = TokenBoundarySplitter(size, overlap, tokenizer).split_spans(text)
            assert len(spans) > 1
            _assert_word_boundaries(text, spans)
            assert max(_count(tokenizer, text[a:b]) for a, b in spans) <= size


def test_overlap_repeats_the_tail_of_the_previous_chunk(tokenizer):
    text = " ".join(f"word{i}" for i in range(200))
    chunks = TokenBoundarySplitter(30, 10, tokenizer).split_text(text)
    assert len(chunks) > 3
    for previous, current in zip(chunks, chunks[1:]):
        first_word = current.split()[0]
        assert first_word in previous.split(), "the next chunk starts inside the previous one"
        assert current.split()[0] != previous.split()[0]


def test_word_longer_than_the_limit_is_cut_at_token_boundaries_only(tokenizer):
    long_word = "-".join(["abc"] * 40)  # one whitespace-free "word" of ~80 tokens
    text = f"start {long_word} end"
    splitter = TokenBoundarySplitter(16, 0, tokenizer)
    chunks = splitter.split_text(text)
    assert all(_count(tokenizer, chunk) <= 16 for chunk in chunks)
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")


def test_tokenizing_in_windows_gives_the_same_chunks(tokenizer):
    text = " ".join(WORDS * 40)
    whole = TokenBoundarySplitter(50, 10, tokenizer).split_spans(text)
    windowed = TokenBoundarySplitter(50, 10, tokenizer, tokenize_window_chars=97).split_spans(text)
    assert whole == windowed


def test_counts_every_token_of_long_texts(tokenizer):
    """tokenizer.json of all-MiniLM-L6-v2 truncates at 128 tokens; the splitter must not."""
    text = " ".join(["lighthouse"] * 1000)
    splitter = TokenBoundarySplitter(100, 0, tokenizer)
    assert splitter.count_tokens(text) == 1000
    assert len(splitter.split_text(text)) == 10


def test_is_a_langchain_text_splitter(tokenizer):
    docs = TokenBoundarySplitter(10, 0, tokenizer).create_documents(["one two three"], [{"source": "a.txt"}])
    assert [d.page_content for d in docs] == ["one two three"]
    assert docs[0].metadata == {"source": "a.txt"}
    with pytest.raises(ValueError):
        TokenBoundarySplitter(10, 20, tokenizer)


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
