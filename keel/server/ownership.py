"""Who owns a conversation: the user who first used its thread id.

Recorded in MongoDB beside the conversations themselves, so every replica agrees. Another user's
thread id is answered exactly like an unknown one would be refused (404), so ids cannot be probed.
"""

from __future__ import annotations

from datetime import datetime, timezone

from keel.core.configuration import Configuration
from keel.stores.connections import get_mongo

OWNERS_COLLECTION = "thread_owners"


class ThreadOwners:
    """thread id -> owner, claimed atomically on first use (``_id`` is the thread id)."""

    def __init__(self, collection):
        self.collection = collection

    @classmethod
    def from_config(cls, cfg: Configuration) -> "ThreadOwners":
        return cls(get_mongo(cfg)[cfg.mongodb_database][OWNERS_COLLECTION])

    def claim(self, thread_id: str, user_id: str) -> bool:
        """True when ``user_id`` owns the thread (now, or already); False when someone else does."""
        from pymongo.errors import DuplicateKeyError

        try:
            self.collection.insert_one({"_id": thread_id, "owner": user_id, "created_at": datetime.now(timezone.utc)})
            return True
        except DuplicateKeyError:
            record = self.collection.find_one({"_id": thread_id})
            return bool(record) and record.get("owner") == user_id

    def owner(self, thread_id: str) -> str | None:
        record = self.collection.find_one({"_id": thread_id})
        return record.get("owner") if record else None
