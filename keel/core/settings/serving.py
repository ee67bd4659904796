"""Limits of the multi-user server (``keel serve``): one group of ``keel.core.configuration.Configuration``.

Every field here is deployment scope: it comes from the server's configuration or environment,
never from a request, so one caller cannot loosen the limits that protect the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class ServingSettings(CheckedSettings):
    """What the server lets one request, one user and all users together do."""

    # --- what one request may send -------------------------------------------------------------
    max_request_bytes: int = field(
        default=256 * 1024,
        metadata={"doc": "Largest body of a chat request, in bytes; larger is a 413 before the body is read.",
                  **AT_LEAST_ONE},
    )
    upload_overhead_bytes: int = field(
        default=64 * 1024,
        metadata={"doc": "An /ingest body may be max_file_bytes as base64 (4/3) plus this many bytes of JSON around it.",
                  **NON_NEGATIVE},
    )
    max_question_chars: int = field(
        default=4000, metadata={"doc": "A question longer than this many characters is a 400 before any token is "
                                "counted.", **AT_LEAST_ONE}
    )
    max_request_new_tokens: int = field(
        default=512, metadata={"doc": "The most max_new_tokens a request may ask for (the model's answer length).",
                               **AT_LEAST_ONE}
    )
    max_request_doc_ids: int = field(
        default=50, metadata={"doc": "Documents one question may be limited to (doc_ids).", **NON_NEGATIVE}
    )
    max_batch_inputs: int = field(
        default=4, metadata={"doc": "Questions one /chat/batch request may carry; they run one after another.",
                             **AT_LEAST_ONE}
    )
    max_request_id_chars: int = field(
        default=128, metadata={"doc": "Longest user, conversation or document id a request may send, in characters.",
                               **AT_LEAST_ONE}
    )
    max_request_recursion_limit: int = field(
        default=25,
        metadata={"doc": "The most graph steps (recursion_limit) a LangGraph Studio run may ask for, and what "
                  "one naming none gets. A Keel turn needs 2 * max_attempts + 2 (8 by default: the answer "
                  "subgraph takes two steps per attempt and one to finish). keel serve takes none from a request.",
                  **AT_LEAST_ONE},
    )
    max_request_checkpoint_map: int = field(
        default=4,
        metadata={"doc": "Subgraph namespaces a LangGraph Studio run's checkpoint_map may name (time travel "
                  "into nested graphs; Keel's graph nests one).", **NON_NEGATIVE},
    )

    # --- how much work runs at once ------------------------------------------------------------
    max_concurrent_generations: int = field(
        default=2, metadata={"doc": "Answers generated at the same time; the small CPU model gains nothing from more.",
                             **AT_LEAST_ONE}
    )
    max_queued_generations: int = field(
        default=16, metadata={"doc": "Requests waiting for a generation slot; beyond this a 503 with Retry-After.",
                              **NON_NEGATIVE}
    )
    generation_queue_timeout_s: float = field(
        default=60.0, metadata={"doc": "How long a request waits for a slot before it gets a 503 with Retry-After, in "
                                "seconds.", **POSITIVE}
    )
    generation_timeout_s: float = field(
        default=300.0, metadata={"doc": "A request still working after this many seconds is stopped (504 or a closed "
                                 "stream).", **POSITIVE}
    )
    cancel_grace_s: float = field(
        default=10.0,
        metadata={"doc": "A cancelled request (client gone, time limit) keeps its generation slot until its model "
                  "call has stopped, at most this long; the model checks between tokens, so this only runs "
                  "out while the model server is still reading a long prompt. Then the slot is freed anyway "
                  "and a warning is logged. In seconds.", **NON_NEGATIVE},
    )
    answering_wait_s: float = field(
        default=10.0,
        metadata={"doc": "A question sent to a conversation still answering one waits this long for that answer, "
                  "then runs after it (both kept, in order) or is refused with 409. Longer than answering_mark_s, "
                  "so a client's retry after its replica died goes through. In seconds.", **POSITIVE},
    )
    answering_mark_s: float = field(
        default=6.0,
        metadata={"doc": "How long a conversation's 'being answered' mark lasts unless its turn renews it (it does, "
                  "while it runs); a replica that dies mid-answer frees its conversations within this time. "
                  "In seconds. Below answering_wait_s.", **POSITIVE, "below_setting": "answering_wait_s"},
    )
    max_concurrent_ingests: int = field(
        default=1, metadata={"doc": "Uploads split and embedded at the same time (CPU-bound); others queue.",
                             **AT_LEAST_ONE}
    )
    ingest_timeout_s: float = field(
        default=300.0, metadata={"doc": "An upload whose ingestion takes longer than this many seconds is answered with "
                                 "a 504.", **POSITIVE}
    )
    busy_retry_after_s: int = field(
        default=5, metadata={"doc": "Retry-After (seconds) sent with a 503 when every slot and the queue are taken.",
                             **NON_NEGATIVE}
    )

    # --- per user ------------------------------------------------------------------------------
    rate_limit_per_minute: float = field(
        default=60.0, metadata={"doc": "Requests per minute a user may sustain (token bucket refill rate).", **POSITIVE}
    )
    rate_limit_burst: int = field(
        default=20, metadata={"doc": "Requests a user may send at once before the per-minute rate applies.",
                              **AT_LEAST_ONE}
    )
    auth_cache_ttl_s: float = field(
        default=5.0, metadata={"doc": "A verified API key is trusted this long without a database read; a "
                               "revoked key stops working within this time. In seconds; 0 = read every time.",
                               **NON_NEGATIVE},
    )
    regex_check_timeout_s: float = field(
        default=1.0, metadata={"doc": "At start-up each configured pattern must finish on adversarial input "
                               "within this many seconds, or the server refuses to start.", **POSITIVE},
    )

    # --- per client address: guessing keys -----------------------------------------------------
    auth_failure_limit: int = field(
        default=10,
        metadata={"doc": "Wrong API keys one client address may send within auth_failure_window_s; then every "
                  "request from it is a 429 with Retry-After, its key not even checked, until the oldest "
                  "failure leaves the window. A request without any key is not counted. 0 turns it off.",
                  **NON_NEGATIVE},
    )
    auth_failure_window_s: float = field(
        default=300.0, metadata={"doc": "The sliding window auth_failure_limit counts wrong keys in, in seconds.",
                                 **POSITIVE}
    )
    auth_failure_tracked_addresses: int = field(
        default=10_000,
        metadata={"doc": "Client addresses whose recent wrong keys are remembered; the one that failed least "
                  "recently is forgotten first, so many addresses cannot fill the server's memory.", **AT_LEAST_ONE},
    )
    auth_failure_ipv6_prefix: int = field(
        default=64,
        metadata={"doc": "IPv6 clients are counted per network of this prefix length (one host usually holds a "
                  "whole /64, so counting single addresses would not bound it).", "minimum": 0, "maximum": 128},
    )

    # --- the web chat page (keel/server/web/) --------------------------------------------------
    web_conversations_listed: int = field(
        default=100,
        metadata={"doc": "Conversations the web page lists for a user (GET /conversations): the most recently "
                  "started this many, shown most recently active first; older ones stay stored and can "
                  "still be continued by their id.", **AT_LEAST_ONE},
    )
    conversation_title_chars: int = field(
        default=80,
        metadata={"doc": "A conversation's title in the web page's list is its first question, cut to this "
                  "many characters.", **AT_LEAST_ONE},
    )
