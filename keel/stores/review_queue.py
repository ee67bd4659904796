"""The review queue: answers waiting for a person, in MongoDB beside the conversations they belong to.

The chat graph files an item when it pauses a turn for review (nodes/review_answer.py) and marks it
done when the turn resumes; ``keel review`` and the server's /review routes read it. So every
process that shares the MongoDB (another ``keel serve`` replica, the command on an operator's
machine, a process started after a restart) sees the same queue, and an item names the conversation
and the asker whose paused run it resumes, never anything a reviewer sends.

Filing is idempotent (the item's id is chosen before the pause and kept in the run's checkpoint), since
LangGraph runs a paused node again from its start when the turn resumes.

An item also says where its paused run lives (``held_in``): in Keel's own checkpointer (``keel serve``,
``keel ask``/``chat``, ``build_graph(memory=True)``), where ``keel review`` and /review resume it, or
in a LangGraph server's persistence (Studio, ``langgraph dev``, LangGraph Platform), where only that
server can resume it: a reviewer does so there, and Studio's auth checks their run against the item
(keel/server/studio_review.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from keel.core.settings import ReviewSettings, RuntimeSettings
from keel.stores.connections import get_mongo

PENDING = "pending"
RESUMING = "resuming"  # claimed by one reviewer's resume: a second one is refused meanwhile
STALE = "stale"  # the conversation went on without the review: nothing is paused there any more
DONE_STATES = ("approved", "edited", "rejected")
HELD_IN_KEEL = "keel"  # Keel's own checkpointer: keel review and /review resume it
HELD_IN_LANGGRAPH_SERVER = "langgraph_server"  # Studio / langgraph dev: resumed by a reviewer's run there


class ReviewQueue:
    """Review items by id (``_id``): pending until a reviewer's action resumes the paused turn."""

    def __init__(self, collection: Any = None, *, connect: Callable[[], Any] | None = None):
        if collection is None and connect is None:
            raise ValueError("pass the collection, or connect= to open it on first use")
        self._collection, self._connect = collection, connect

    @classmethod
    def from_settings(cls, runtime: RuntimeSettings, review: ReviewSettings) -> ReviewQueue:
        """The configured MongoDB's queue, connected on first use (compiling a graph opens nothing)."""
        database, name = runtime.mongodb_database, review.review_queue_collection
        return cls(connect=lambda: get_mongo(runtime)[database][name])

    @classmethod
    def of_deployment(cls) -> ReviewQueue:
        """The queue the deployment's environment names (``MONGODB_URI``, or the embedded server under
        ``KEEL_HOME``), its settings read and its database opened on first use: what the graph that
        LangGraph Studio loads files its held turns in, where Keel's Studio auth and ``keel review``
        find them."""
        def connect():
            runtime, review = RuntimeSettings(), ReviewSettings()
            return get_mongo(runtime)[runtime.mongodb_database][review.review_queue_collection]

        return cls(connect=connect)

    @property
    def collection(self) -> Any:
        if self._collection is None:
            self._collection = self._connect()
        return self._collection

    def file(self, item: dict[str, Any]) -> str:
        """File ``item`` (which carries its ``_id`` and ``thread_id``) as pending, once: filing it again
        changes nothing. An earlier item of the same conversation still pending is marked stale: the
        asker asked again, so that paused turn can no longer be resumed. A conversation is its id, its
        asker and where it is held: a Studio thread and a ``keel serve`` conversation of the same id
        never retire each other's items."""
        from pymongo.errors import DuplicateKeyError

        record = {**item, "state": PENDING, "created_at": item.get("created_at") or _now()}
        for earlier in self.collection.find(_same_conversation(record, state=PENDING)):
            if earlier["_id"] != record["_id"]:
                self.mark_stale(earlier["_id"])
        try:
            self.collection.insert_one(record)
        except DuplicateKeyError:
            pass
        return record["_id"]

    def get(self, review_id: str) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": review_id})

    def pending(self, limit: int) -> list[dict[str, Any]]:
        """Items waiting for a reviewer, the oldest first."""
        return list(self.collection.find({"state": PENDING}, sort=[("created_at", 1)], limit=limit))

    def pending_in_thread(self, thread_id: str, held_in: str) -> dict[str, Any] | None:
        """The item a conversation held in ``held_in`` is paused at, or None: at most one is pending
        per conversation (filing a new one marks the earlier stale)."""
        return self.collection.find_one({"thread_id": str(thread_id), "held_in": held_in, "state": PENDING})

    def retire(self, thread_id: str, user_id: str, held_in: str) -> None:
        """Mark the asker's pending items in this conversation stale: they asked again there (which
        discards the pause) or deleted it, so nothing is left for a reviewer to resume or read."""
        query = _same_conversation({"thread_id": str(thread_id), "user_id": user_id, "held_in": held_in},
                                   state=PENDING)
        for item in self.collection.find(query):
            self.mark_stale(item["_id"])

    def claim(self, review_id: str, reviewer: str) -> bool:
        """Take a pending item for one resume; False when it is not pending (unknown, done, or taken)."""
        result = self.collection.update_one({"_id": review_id, "state": PENDING},
                                            {"$set": {"state": RESUMING, "claimed_by": reviewer}})
        return result.matched_count == 1

    def release(self, review_id: str) -> None:
        """Give a claimed item back (its resume failed before the turn was settled)."""
        self.collection.update_one({"_id": review_id, "state": RESUMING}, {"$set": {"state": PENDING}})

    def mark_stale(self, review_id: str) -> None:
        self.collection.update_one({"_id": review_id}, {"$set": {"state": STALE}})

    def mark_done(self, review_id: str, outcome: dict[str, Any]) -> None:
        """Record the reviewer's action (``state`` approved / edited / rejected, who and when)."""
        self.collection.update_one({"_id": review_id}, {"$set": dict(outcome)})


def _same_conversation(item: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A query for the items of ``item``'s conversation: the same id, asker and place it is held."""
    return {"thread_id": item.get("thread_id"), "user_id": item.get("user_id"),
            "held_in": item.get("held_in", HELD_IN_KEEL), **more}


def _now() -> datetime:
    return datetime.now(UTC)
