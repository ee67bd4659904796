"""Follow-ups: sub-questions searched in parallel, and the follow-up rule, with fakes; the follow-up cache and
the follow-up turn on the real Redis Stack with real embeddings are in integration_tests/test_followups.py."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document

from keel.core.configuration import Configuration
from keel.retrievers.fanout import merge_round_robin, search_parallel, search_scopes, split_subquestions
from keel.retrievers.k_sizing import k_max_for_config
from tests.fakes import StaticRetriever

# --- sub-questions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, expected",
    [
        ("Who built the lighthouse and when was it painted?", ["Who built the lighthouse?", "when was it painted?"]),
        ("Who built the lighthouse? How far can its lamp be seen?", ["Who built the lighthouse?", "How far can its lamp be seen?"]),
        ("How do I file a claim and what documents do I need; where do I send them?",
         ["How do I file a claim?", "what documents do I need?", "where do I send them?"]),
        ("I read the report. Who built the lighthouse?", ["I read the report. Who built the lighthouse?"]),
        ("Really? Who built the lighthouse? And who kept it afterwards?",
         ["Really? Who built the lighthouse?", "And who kept it afterwards?"]),
    ],
)
def test_compound_questions_are_split(question, expected):
    assert split_subquestions(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What are the fees and opening hours?",  # "and" joins nouns, not questions
        "What did Mara Holt and Ilse Brand do?",
        "Describe the harbour and explain the ferry times.",  # not questions
        "Who built it and when?",  # the second part is too short to stand alone
        "Is it red and white?",
    ],
)
def test_simple_questions_are_not_split(question):
    assert split_subquestions(question) == [question]


def test_more_parts_than_allowed_are_searched_together_in_the_last():
    question = "Who built it first? Who kept it later? Who painted it red? Who owns it today?"
    assert split_subquestions(question, max_parts=2) == [
        "Who built it first?", "Who kept it later? Who painted it red? Who owns it today?"
    ]
    assert split_subquestions(question, max_parts=1) == [question]


TOKENS = ["a", "bb", "ccc", "and", "who", "what", "is", "as well as", "?", ";", ",", "."]


@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join), st.integers(1, 6))
def test_splitting_is_deterministic_bounded_and_invents_no_words(question, max_parts):
    parts = split_subquestions(question, max_parts)
    assert parts == split_subquestions(question, max_parts)
    assert len(parts) <= max(1, max_parts)
    assert all(part.strip() for part in parts)
    original = set(question.replace("?", " ").replace(";", " ").replace(",", " ").replace(".", " ").split())
    for part in parts:
        assert set(part.replace("?", " ").replace(";", " ").replace(",", " ").replace(".", " ").split()) <= original


# --- parallel search and merging --------------------------------------------------------------------


class BarrierRetriever(StaticRetriever):
    """Waits until ``parties`` searches are running at once: a serial run times out and fails.
    The timeout is only ever reached by a serial run, so it is generous for a loaded machine."""

    barrier: object = None

    def _get_relevant_documents(self, query, *, run_manager):
        self.barrier.wait(timeout=60)
        return [Document(page_content=f"answer to {query}", metadata={"doc_id": "d", "page": 1})]


def test_sub_question_searches_run_at_the_same_time():
    barrier = threading.Barrier(3)
    retriever = BarrierRetriever(documents=[], barrier=barrier)
    results = search_parallel([(retriever, "q1"), (retriever, "q2"), (retriever, "q3")])
    assert [r[0].page_content for r in results] == ["answer to q1", "answer to q2", "answer to q3"]
    assert not barrier.broken


def doc(parent: str, score: float, doc_id: str = "d") -> Document:
    return Document(id=parent, page_content=parent, metadata={"doc_id": doc_id, "score": score, "max_similarity": score})


def test_round_robin_merge_represents_every_list_first_and_keeps_the_better_score():
    first = [doc("a1", 0.9), doc("shared", 0.5), doc("a3", 0.4)]
    second = [doc("b1", 0.8), doc("shared", 0.7)]
    merged = merge_round_robin([first, second])
    assert [d.id for d in merged] == ["a1", "b1", "shared", "a3"]
    assert merged[2].metadata["max_similarity"] == 0.7
    without_ids = [Document(page_content="same", metadata={"doc_id": "x", "page": 1})] * 2
    assert len(merge_round_robin([without_ids])) == 1


def test_every_search_gets_its_hamilton_share_of_k_max():
    seen: list[tuple[int, tuple | None, str]] = []
    lock = threading.Lock()

    class Recording(StaticRetriever):
        k: int = 0
        scope: tuple | None = None

        def _get_relevant_documents(self, query, *, run_manager):
            with lock:
                seen.append((self.k, self.scope, query))
            return [doc(f"{self.scope}-{query}", 0.5, doc_id=(self.scope or ("all",))[0])]

    def factory(cfg, doc_ids):
        assert cfg.retrieval_k_sizing == "fixed" and cfg.page_expansion_pages == 0
        return Recording(documents=[], k=cfg.retrieval_k_children, scope=tuple(doc_ids) if doc_ids else None)

    cfg = Configuration()
    per_scope = search_scopes(
        "Who built the lighthouse and when was it painted?", factory, cfg, [["d1"], ["d2"], ["d3"]],
        available=[None, 3, None],
    )
    assert len(seen) == 6 and {q for _, _, q in seen} == {"Who built the lighthouse?", "when was it painted?"}
    assert sum(k for k, _, _ in seen) == k_max_for_config(cfg)
    assert all(k <= 3 for k, scope, _ in seen if scope == ("d2",))
    assert [len(found) for found in per_scope] == [2, 2, 2]


# --- the follow-up rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, cue",
    [
        ("Could you say that again, more briefly please?", True), ("What about the school?", True),
        ("And the ferry?", True), ("Is it red?", True),
        ("Tell me more about the ferry.", True), ("What is the capital of France?", False),
        ("Who built the Varden lighthouse?", False), ("Itself a lighthouse?", False), ("Thatch roofs?", False),
    ],
)
def test_follow_up_cues_are_whole_words(question, cue):
    from keel.retrievers.followup_cache import has_followup_cue

    assert has_followup_cue(question, Configuration().followup_cues) is cue


def test_the_similarity_rule_uses_the_configured_threshold():
    from keel.retrievers.followup_cache import CachedContext, is_follow_up

    cached = CachedContext(question="q", passages=[], question_vector=[1.0, 0.0])
    at_60_degrees = [0.5, 0.75**0.5]  # cosine 0.5
    assert is_follow_up("Where is the harbour?", at_60_degrees, cached, Configuration(followup_similarity=0.5))
    assert not is_follow_up("Where is the harbour?", at_60_degrees, cached, Configuration(followup_similarity=0.6))
    assert is_follow_up("Where is it?", [0.0, 1.0], cached, Configuration(followup_similarity=0.6))  # a cue
    assert not is_follow_up("Where is the harbour?", [0.0, 1.0], CachedContext("q", []), Configuration())  # no vector cached


def test_merging_never_changes_the_documents_a_retriever_handed_out():
    shared = doc("p", 0.5)
    merged = merge_round_robin([[shared], [doc("p", 0.9)]])
    assert merged[0].metadata["max_similarity"] == 0.9 and shared.metadata["max_similarity"] == 0.5
