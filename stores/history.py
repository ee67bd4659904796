"""Conversation memory: LangGraph's MongoDB checkpointer, keyed by conversation id (thread_id).

Works against any MongoDB, and against the embedded nx-27017 wire server by default, so a
follow-up question sees the earlier turns also after the process restarts.
"""

from __future__ import annotations

from graph.configuration import Configuration


def get_checkpointer(cfg: Configuration):
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from stores.connections import get_mongo

    return MongoDBSaver(get_mongo(cfg), db_name=cfg.mongodb_database)
