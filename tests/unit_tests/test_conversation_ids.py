"""Every user names their own conversations: the thread a conversation is kept under is the user's
own, no two users' ids meet, and conversations from before per-user ids keep their thread."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from keel.server.ownership import ThreadOwners, conversation_of, thread_of
from tests.serving_fakes import InMemoryCollection


@pytest.mark.parametrize(("first", "second"), [
    (("alice", "team-standup"), ("bob", "team-standup")),
    (("a/b", "c"), ("a", "b/c")),  # a separator in a user id cannot make two users' threads meet
    (("a%2Fb", "c"), ("a/b", "c")),
])
def test_two_users_same_id_two_threads(first, second):
    assert thread_of(*first) != thread_of(*second)
    for user, conversation in (first, second):
        assert conversation_of(user, thread_of(user, conversation)) == conversation


def test_a_claim_is_the_callers_own_whoever_used_the_id_first():
    owners = ThreadOwners(InMemoryCollection())
    alice = owners.claim("team-standup", "alice")
    bob = owners.claim("team-standup", "bob")
    assert alice and bob and alice != bob
    assert owners.claim("team-standup", "alice") == alice  # the same conversation again
    assert owners.thread("team-standup", "alice") == alice and owners.thread("never", "alice") is None
    assert owners.owned("bob", 10) == [("team-standup", bob)]


def test_a_conversation_from_before_per_user_ids_keeps_its_thread_for_its_owner_only():
    collection = InMemoryCollection()
    collection.insert_one({"_id": "old-thread", "owner": "alice", "created_at": datetime.now(timezone.utc)})
    owners = ThreadOwners(collection)
    assert owners.claim("old-thread", "alice") == "old-thread"
    assert owners.thread("old-thread", "alice") == "old-thread"
    assert owners.claim("old-thread", "bob") == thread_of("bob", "old-thread")  # not alice's
    assert ("old-thread", "old-thread") in owners.owned("alice", 10)
    assert conversation_of("alice", "old-thread") == "old-thread"
