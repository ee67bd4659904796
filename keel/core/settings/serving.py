"""Limits of the multi-user server (``keel serve``): one group of ``keel.core.configuration.Configuration``.

Every field here is deployment scope: it comes from the server's configuration or environment,
never from a request, so one caller cannot loosen the limits that protect the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class ServingSettings:
    """What the server lets one request, one user and all users together do."""

    # --- what one request may send -------------------------------------------------------------
    max_request_bytes: int = field(
        default=256 * 1024,
        metadata={"doc": "Largest body of a chat request; larger is a 413 before the body is read."},
    )
    upload_overhead_bytes: int = field(
        default=64 * 1024,
        metadata={"doc": "An /ingest body may be max_file_bytes as base64 (4/3) plus this much JSON around it."},
    )
    max_question_chars: int = field(
        default=4000, metadata={"doc": "A longer question is a 400 before any token is counted."}
    )
    max_request_new_tokens: int = field(
        default=512, metadata={"doc": "The most max_new_tokens a request may ask for (the model's answer length)."}
    )
    max_request_doc_ids: int = field(default=50, metadata={"doc": "Documents one question may be limited to."})
    max_batch_inputs: int = field(
        default=4, metadata={"doc": "Questions one /chat/batch request may carry; they run one after another."}
    )
    max_request_id_chars: int = field(
        default=128, metadata={"doc": "Longest user, conversation or document id a request may send."}
    )
    max_request_recursion_limit: int = field(
        default=25,
        metadata={"doc": "The most graph steps (recursion_limit) a LangGraph Studio run may ask for, and what "
                  "one naming none gets. A Keel turn needs 2 * max_attempts + 2 (8 by default: the answer "
                  "subgraph takes two steps per attempt and one to finish). keel serve takes none from a request."},
    )
    max_request_checkpoint_map: int = field(
        default=4,
        metadata={"doc": "Subgraph namespaces a LangGraph Studio run's checkpoint_map may name (time travel "
                  "into nested graphs; Keel's graph nests one)."},
    )

    # --- how much work runs at once ------------------------------------------------------------
    max_concurrent_generations: int = field(
        default=2, metadata={"doc": "Answers generated at the same time; the small CPU model gains nothing from more."}
    )
    max_queued_generations: int = field(
        default=16, metadata={"doc": "Requests waiting for a generation slot; beyond this a 503 with Retry-After."}
    )
    generation_queue_timeout_s: float = field(
        default=60.0, metadata={"doc": "How long a request waits for a slot before it gets a 503 with Retry-After."}
    )
    generation_timeout_s: float = field(
        default=300.0, metadata={"doc": "A request still working after this is stopped (504 or a closed stream)."}
    )
    cancel_grace_s: float = field(
        default=10.0,
        metadata={"doc": "A cancelled request (client gone, time limit) keeps its generation slot until its model "
                  "call has stopped, at most this long; the model checks between tokens, so this only runs "
                  "out while the model server is still reading a long prompt. Then the slot is freed anyway "
                  "and a warning is logged."},
    )
    max_concurrent_ingests: int = field(
        default=1, metadata={"doc": "Uploads split and embedded at the same time (CPU-bound); others queue."}
    )
    ingest_timeout_s: float = field(
        default=300.0, metadata={"doc": "An upload whose ingestion takes longer is answered with a 504."}
    )
    busy_retry_after_s: int = field(
        default=5, metadata={"doc": "Retry-After sent with a 503 when every slot and the queue are taken."}
    )

    # --- per user ------------------------------------------------------------------------------
    rate_limit_per_minute: float = field(
        default=60.0, metadata={"doc": "Requests per minute a user may sustain (token bucket refill rate)."}
    )
    rate_limit_burst: int = field(
        default=20, metadata={"doc": "Requests a user may send at once before the per-minute rate applies."}
    )
    auth_cache_ttl_s: float = field(
        default=5.0, metadata={"doc": "A verified API key is trusted this long without a database read; a "
                               "revoked key stops working within this time."},
    )
    regex_check_timeout_s: float = field(
        default=1.0, metadata={"doc": "At start-up each configured pattern must finish on adversarial input "
                               "within this time, or the server refuses to start."},
    )

    # --- per client address: guessing keys -----------------------------------------------------
    auth_failure_limit: int = field(
        default=10,
        metadata={"doc": "Wrong API keys one client address may send within auth_failure_window_s; then every "
                  "request from it is a 429 with Retry-After, its key not even checked, until the oldest "
                  "failure leaves the window. A request without any key is not counted. 0 turns it off."},
    )
    auth_failure_window_s: float = field(
        default=300.0, metadata={"doc": "The sliding window auth_failure_limit counts wrong keys in, in seconds."}
    )
    auth_failure_tracked_addresses: int = field(
        default=10_000,
        metadata={"doc": "Client addresses whose recent wrong keys are remembered; the one that failed least "
                  "recently is forgotten first, so many addresses cannot fill the server's memory."},
    )
    auth_failure_ipv6_prefix: int = field(
        default=64,
        metadata={"doc": "IPv6 clients are counted per network of this prefix length (one host usually holds a "
                  "whole /64, so counting single addresses would not bound it)."},
    )
