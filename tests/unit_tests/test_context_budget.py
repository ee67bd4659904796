"""The passages fit the token budget that is really left: window minus answer reserve, the prompt's
rules and examples, system prompt, question and history. Property tests with a word tokenizer; the real
SmolLM2 tokenizer and chat template on the real prompt are in integration_tests/test_context_budget.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from keel.chains.answer_messages import format_passage
from keel.core.configuration import Configuration
from keel.core.state import Passage
from keel.components import Components
from keel.chains.context import (
    SEPARATOR_TOKENS,
    context_budget,
    fit_passages,
    prompt_scaffold_tokens,
)
from keel.retrievers.passages import interleave_by_document, merge_passages
from tests.fakes import WordTokenizer
from tests.property_budget import examples

FAKE = Components(tokenizer=WordTokenizer())


def passage(n: int, words: int, doc_id: str = "d", similarity: float = 0.5) -> Passage:
    text = " ".join(f"w{n}x{i}" for i in range(words))
    return Passage(number=n, text=text, source="s.pdf", page=n, doc_id=doc_id, score=similarity, similarity=similarity)


def used_tokens(passages, components=FAKE, cfg=None) -> int:
    cfg = cfg or Configuration()
    return sum(components.count_tokens(cfg, format_passage(p)) + SEPARATOR_TOKENS for p in passages)


@settings(max_examples=examples(200))
@given(st.lists(st.integers(1, 400), max_size=8), st.integers(-50, 3000), st.integers(0, 6))
def test_fitted_passages_never_exceed_the_budget_and_keep_their_order(sizes, budget, max_parents):
    cfg = Configuration(max_context_parents=max_parents)
    passages = [passage(i + 1, words) for i, words in enumerate(sizes)]
    fitted = fit_passages(passages, budget, cfg, FAKE)
    assert used_tokens(fitted) <= max(budget, 0)
    assert [p["number"] for p in fitted] == list(range(1, len(fitted) + 1))
    if max_parents:
        assert len(fitted) <= max_parents
    for original, shown in zip(passages, fitted):
        assert original["text"].startswith(shown["text"]) and shown["page"] == original["page"]
    whole = [p for p, o in zip(fitted, passages) if p["text"] == o["text"]]
    assert fitted[: len(whole)] == whole, "only the last passage may be cut"


def test_the_budget_subtracts_the_prompt_scaffolding_and_every_fixed_text():
    cfg = Configuration(llm_context_window=4096, max_new_tokens=300)
    fixed = ["You are Keel.", "Who built it?", "Earlier question", "Earlier answer"]
    budget = context_budget(cfg, FAKE, fixed)
    scaffold = prompt_scaffold_tokens(cfg, FAKE)
    assert scaffold > 200, "the rules and few-shot examples are a real part of the prompt"
    used = sum(FAKE.count_tokens(cfg, t) for t in fixed)
    assert budget < 4096 - 300 - scaffold - used
    assert budget == context_budget(cfg, FAKE, fixed)
    assert context_budget(Configuration(llm_context_window=8192, max_new_tokens=300), FAKE, fixed) == budget + 4096


def test_merge_and_interleave_represent_each_document_first():
    a1, a2, b1 = passage(1, 5, "a", 0.9), passage(2, 5, "a", 0.8), passage(3, 5, "b", 0.4)
    assert [p["doc_id"] for p in interleave_by_document([a1, a2, b1])] == ["a", "b", "a"]
    merged = merge_passages([a1, b1], [b1, a2])
    assert [p["text"] for p in merged] == [a1["text"], b1["text"], a2["text"]]
    assert [p["number"] for p in merged] == [1, 2, 3]
