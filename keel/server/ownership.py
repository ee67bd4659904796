"""Whose a conversation is: every user names their own conversations.

A conversation id is the caller's own name for it, as a file name is within a home folder: Keel keeps
user U's conversation C under the thread ``U/C`` (U percent-encoded, so no user's prefix is another's),
in the checkpointer, the owners' registry and the tags of the documents uploaded into it. Two users
may both call a conversation "team-standup" and each gets their own; no id is ever refused for being
someone else's, so none can be squatted and none tells whether another user has used it. Clients
see only their own ids (``conversation_of``).

The registry, in MongoDB beside the conversations themselves (every replica agrees), lists each
user's conversations for the web page. Conversations started before ids were per user keep their
thread: a record whose ``_id`` is the id itself and whose owner is the caller (``legacy``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from keel.core.configuration import Configuration
from keel.stores.connections import get_mongo

OWNERS_COLLECTION = "thread_owners"
SEPARATOR = "/"  # between the encoded user and the conversation id; an encoded user never holds it


def thread_of(user_id: str, conversation_id: str) -> str:
    """The thread user ``user_id``'s conversation ``conversation_id`` is kept under."""
    return f"{quote(user_id, safe='')}{SEPARATOR}{conversation_id}"


def conversation_of(user_id: str, thread_id: str) -> str:
    """The caller's own id of one of their threads (a legacy thread's id is the id itself)."""
    prefix = thread_of(user_id, "")
    return thread_id[len(prefix):] if thread_id.startswith(prefix) else thread_id


class ThreadOwners:
    """The registry of conversations: ``_id`` the thread, ``owner``, ``conversation`` (the owner's id)."""

    def __init__(self, collection):
        self.collection = collection

    @classmethod
    def from_config(cls, cfg: Configuration) -> ThreadOwners:
        return cls(get_mongo(cfg)[cfg.mongodb_database][OWNERS_COLLECTION])

    def claim(self, conversation_id: str, user_id: str) -> str | None:
        """The thread of ``user_id``'s conversation, filed on first use. None only where a legacy
        conversation of another user already holds that thread name (ids made before per-user ids)."""
        from pymongo.errors import DuplicateKeyError

        if self.legacy(conversation_id, user_id):
            return conversation_id
        thread = thread_of(user_id, conversation_id)
        try:
            self.collection.insert_one({"_id": thread, "owner": user_id, "conversation": conversation_id,
                                        "created_at": datetime.now(UTC)})
        except DuplicateKeyError:
            record = self.collection.find_one({"_id": thread})
            if not record or record.get("owner") != user_id:
                return None
        return thread

    def legacy(self, conversation_id: str, user_id: str) -> bool:
        """Whether ``conversation_id`` is one of the user's conversations from before per-user ids."""
        record = self.collection.find_one({"_id": conversation_id})
        return bool(record) and record.get("owner") == user_id and "conversation" not in record

    def thread(self, conversation_id: str, user_id: str) -> str | None:
        """The thread of an existing conversation of the user's; None when they have none by that id."""
        if self.legacy(conversation_id, user_id):
            return conversation_id
        thread = thread_of(user_id, conversation_id)
        record = self.collection.find_one({"_id": thread})
        return thread if record and record.get("owner") == user_id else None

    def owned(self, user_id: str, limit: int) -> list[tuple[str, str]]:
        """The user's (conversation id, thread), the most recently started first, at most ``limit``."""
        records = self.collection.find({"owner": user_id}, sort=[("created_at", -1)], limit=limit)
        return [(record.get("conversation", record["_id"]), record["_id"]) for record in records]

    def owner(self, thread_id: str) -> str | None:
        record = self.collection.find_one({"_id": thread_id})
        return record.get("owner") if record else None
