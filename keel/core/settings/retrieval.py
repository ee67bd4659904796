"""Finding the passages: how many children one pass fetches (the logistic k(x) of the model's context
window, shared across retrievers by Hamilton apportionment), when a child counts as relevant, page
expansion, exact-term search, compound questions searched in parallel, and the follow-up cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class RetrievalSettings(CheckedSettings):
    """How many passages are fetched, which count, and the follow-up cache."""

    relevance_threshold: float = field(
        default=0.35,
        metadata={"doc": "Cosine similarity a child chunk needs to count as relevant (routing).", **SHARE},
    )
    retrieval_k_children: int = field(
        default=24,
        metadata={"doc": "Children fetched by KNN per question when retrieval_k_sizing is fixed.", **AT_LEAST_ONE},
    )
    max_context_parents: int = field(
        default=4,
        metadata={"doc": "Parent passages put in the prompt at most (fewer when the context budget is smaller); "
                  "0 = as many as fit.", **NON_NEGATIVE},
    )
    # --- how many children one pass fetches (retrievers/k_sizing.py) ---------------------------------
    retrieval_k_sizing: Literal["logistic", "fixed"] = field(
        default="logistic",
        metadata={"doc": "logistic: children per retrieval = k(llm_context_window), so a model with a larger context "
                  "window gets more passages without retuning; fixed: retrieval_k_children."},
    )
    k_logistic_saturation: float = field(
        default=120.0, metadata={"doc": "L of k(x) = L / (1 + exp(-a (x - m))): the most children one pass fetches.",
                                 "minimum": 1.0}
    )
    k_logistic_slope: float = field(
        default=3.6e-5,
        metadata={"doc": "a of k(x), per token; least-squares fit to the targets k(30k) ~ 50, k(120k) ~ 110, "
                  "k(125k) ~ 115, k(130k) ~ 120.", **POSITIVE},
    )
    k_logistic_midpoint: float = field(
        default=39_400.0, metadata={"doc": "m of k(x), tokens: where k = L/2.", **NON_NEGATIVE}
    )
    retrieval_k_max: int = field(
        default=0,
        metadata={"doc": "K_max children shared by all retrievers of a pass (Hamilton apportionment); 0 = k(x).",
                  **NON_NEGATIVE},
    )
    # --- what a search adds and how it runs ---------------------------------------------------------
    page_expansion_pages: int = field(
        default=1,
        metadata={"doc": "Neighbouring pages (±N) of a hit added to the context, so a passage that runs over a "
                  "page break is whole; 0 = off.", **NON_NEGATIVE},
    )
    exact_term_boost: float = field(
        default=0.15,
        metadata={"doc": "A question naming a model, code or name (ZR-200, AX3000, Rollo) also searches it as text; "
                  "children that hold it rank this much above their cosine similarity, so a look-alike's passage "
                  "does not crowd out the one asked about. 0 = vector search only.", **SHARE},
    )
    max_subquestions: int = field(
        default=4, metadata={"doc": "A compound question is searched as at most this many sub-questions, in parallel.",
                             **AT_LEAST_ONE}
    )
    subquestion_min_words: int = field(
        default=3, metadata={"doc": "Each side of a split needs this many words, so 'Who built it and when?' stays "
                             "whole.", **AT_LEAST_ONE}
    )
    subquestion_splitter: Literal["auto", "rules", "model"] = field(
        default="auto",
        metadata={"doc": "How a compound question is split. rules: on question marks and on 'and' before a new "
                  "question, no model call; model: the chat model's forced tool call names the sub-questions (rules "
                  "when it fails; about 2.3 s more, for the 1.5B pool model here, per question that may be compound); auto: model for a pool model "
                  "whose chat template takes tools (not SmolLM2), else rules.",
                  "env": "KEEL_SUBQUESTION_SPLITTER"},
    )
    subquestion_max_tokens: int = field(
        default=160, metadata={"doc": "Tokens the model may write when it splits a question.", **AT_LEAST_ONE}
    )
    search_max_workers: int = field(
        default=8, metadata={"doc": "Threads for the parallel searches of one pass.", **AT_LEAST_ONE}
    )
    query_vector_memo_size: int = field(
        default=256, metadata={"doc": "Query embeddings kept per process, so the nodes of one turn embed a question "
                               "once.", **NON_NEGATIVE}
    )
    # --- follow-ups rewritten as standalone questions (chains/condense.py) ---------------------------
    followup_rewrite: Literal["model", "rules", "off"] = field(
        default="model",
        metadata={"doc": "A question that leans on the conversation (\"And on Sundays?\", \"Who signed it?\") is "
                  "searched and answered as the standalone question it stands for. model: the chat model "
                  "rewrites it, kept only if it keeps the user's words and adds only the conversation's, else "
                  "the rules do (about 1 s a follow-up); rules: the rules only (English); off: asked as typed."},
    )
    followup_rewrite_max_tokens: int = field(
        default=48, metadata={"doc": "Most tokens the chat model may write for a follow-up's rewrite.", **AT_LEAST_ONE}
    )
    # --- follow-up questions (retrievers/followup_cache.py) ------------------------------------------
    followup_cache_ttl_seconds: int = field(
        default=300,
        metadata={"doc": "A conversation's last context is cached this long (5 minutes: a follow-up "
                  "comes soon or not at all) and answers a follow-up without a new search, in seconds; 0 = off.",
                  **NON_NEGATIVE},
    )
    followup_cache_max_passages: int = field(
        default=8, metadata={"doc": "Passages the follow-up cache keeps per conversation.", **AT_LEAST_ONE}
    )
    followup_similarity: float = field(
        default=0.5,
        metadata={"doc": "Follow-up rule (retrievers/followup_cache.py): a question is a follow-up when its embedding's "
                  "cosine to the cached question is at least this, or it has a follow-up cue; else the cache is ignored.",
                  **SHARE},
    )
    followup_cues: tuple[str, ...] = field(
        default=("it", "its", "they", "them", "their", "that", "this", "those", "these", "he", "she", "him", "her",
                 "what about", "how about", "and the", "again", "more about", "elaborate", "the same"),
        metadata={"doc": "Words and phrases (whole words, any case) that mark a question as referring back.",
                  "min_chars": 1},
    )
