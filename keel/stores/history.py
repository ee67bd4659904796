"""Conversation memory: LangGraph's MongoDB checkpointer, keyed by conversation id (thread_id).

Works against any MongoDB, and against the embedded nx-27017 wire server by default, so a
follow-up question sees the earlier turns also after the process restarts. The saver is wrapped so
that MongoDB going away mid-answer costs a retry, not the answer (keel/stores/resilient_history.py).
"""

from __future__ import annotations

from keel.core.settings import ConversationStoreSettings
from keel.runtime.servers import mongodb_uri, redact
from keel.stores.connections import get_mongo
from keel.stores.resilient_history import ResilientCheckpointSaver


def get_checkpointer(cfg: ConversationStoreSettings) -> ResilientCheckpointSaver:
    """The conversation store: LangGraph's MongoDB checkpointer, reconnecting when MongoDB restarts."""
    from langgraph.checkpoint.mongodb import (
        MongoDBSaver,  # a third of a second; only where history is kept
    )

    def connect() -> MongoDBSaver:
        # get_mongo checks a configured server and restarts the embedded one if it died
        return MongoDBSaver(get_mongo(cfg), db_name=cfg.mongodb_database)

    return ResilientCheckpointSaver(
        connect,
        where=redact(mongodb_uri(cfg)),
        attempts=cfg.history_save_attempts,
        backoff_s=cfg.history_retry_backoff_s,
        retry_interval_s=cfg.history_retry_interval_s,
        max_pending=cfg.history_max_pending_writes,
    )
