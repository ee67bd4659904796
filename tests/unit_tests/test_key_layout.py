"""The chunk store's key names: on a single Redis exactly the names documents were always stored under
(a change would orphan what users stored), on a cluster the user's key as a hash tag so one
document's keys share a slot; the names copy_to_cluster gives a single Redis's keys."""

from __future__ import annotations

import pytest
import redis
from langchain_core.documents import Document

from keel.core.settings.storage import StorageSettings
from keel.stores.key_layout import cluster_key, slot_tag, tagged_id, untagged_id
from keel.stores.chunk_store import RedisChunkStore
from tests.fakes import BagOfWordsEmbeddings

INDEX = "user_conversations"


def _single_store() -> RedisChunkStore:
    # redis.Redis connects on first use only: nothing here talks to a server
    return RedisChunkStore(redis.Redis(), BagOfWordsEmbeddings(), StorageSettings(index_name=INDEX))


def test_a_single_redis_keeps_the_names_documents_were_always_stored_under():
    store = _single_store()
    owner = store._user_key("ada")
    assert len(owner) == 16  # a fixed-width hash of the user id
    assert not store.slot_tags
    assert store._manifest_key("ada", "handbook") == f"{INDEX}:doc:{owner}:handbook"
    assert store._user_docs_key("ada") == f"{INDEX}:docs:{owner}"
    assert store.child_key(f"{owner}:handbook:p0:c0") == f"{INDEX}:child:{owner}:handbook:p0:c0"
    assert store.parent_key(f"{owner}:handbook:p0") == f"{INDEX}:parent:{owner}:handbook:p0"
    assert store.chunk_id_of(f"{INDEX}:child:{owner}:handbook:p0:c0") == f"{owner}:handbook:p0:c0"


def test_a_cluster_store_tags_every_key_of_a_user_with_the_user_key():
    store = _single_store()
    store.slot_tags = True  # what a RedisCluster client sets
    owner = store._user_key("ada")
    assert store._manifest_key("ada", "handbook") == f"{INDEX}:doc:{{{owner}}}:handbook"
    assert store._user_docs_key("ada") == f"{INDEX}:docs:{{{owner}}}"
    child = store.child_key(f"{owner}:handbook:p0:c0")
    assert child == f"{INDEX}:child:{{{owner}}}:handbook:p0:c0" and child.startswith(f"{INDEX}:child:")
    assert store.chunk_id_of(child) == f"{owner}:handbook:p0:c0"  # the id a search result gives back
    slots = {redis.cluster.key_slot(key.encode()) for key in (
        child, store.parent_key(f"{owner}:handbook:p0"), store._manifest_key("ada", "handbook"),
        store._user_docs_key("ada"))}
    assert len(slots) == 1


def test_tagging_helpers_round_trip():
    assert slot_tag("abc") == "{abc}"
    assert tagged_id("abc:doc:p0") == "{abc}:doc:p0"
    assert untagged_id("{abc}:doc:p0") == "abc:doc:p0"
    assert untagged_id("abc:doc:p0") == "abc:doc:p0"


def test_copy_to_cluster_names_each_single_redis_key_as_the_cluster_store_does():
    single, cluster = _single_store(), _single_store()
    cluster.slot_tags = True
    owner = single._user_key("ada")
    doc = Document(id=f"{owner}:handbook:p0", page_content="x")
    pairs = [
        (single.child_key(doc.id + ":c0"), cluster.child_key(doc.id + ":c0")),
        (single.parent_key(doc.id), cluster.parent_key(doc.id)),
        (single._manifest_key("ada", "handbook"), cluster._manifest_key("ada", "handbook")),
        (single._user_docs_key("ada"), cluster._user_docs_key("ada")),
    ]
    for old, new in pairs:
        assert cluster_key(old, INDEX) == new
        assert cluster_key(new, INDEX) == new  # already moved: left alone
    assert cluster_key(f"{INDEX}:followup:abc", INDEX) == f"{INDEX}:followup:abc"
    assert cluster_key(f"other:child:{owner}:x", INDEX) == f"other:child:{owner}:x"


class _FakeCluster:
    """Three primaries; a search sees ``visible`` of the shards (3: a coordinated cluster)."""

    def __init__(self, visible: int):
        self.visible = visible
        self.keys: dict[str, dict] = {}
        self.deleted: list[str] = []

    class _Node:
        def __init__(self, name):
            self.name = name

    def get_primaries(self):
        return [self._Node(f"node-{n}") for n in range(3)]

    def get_node_from_key(self, key):
        return self._Node(f"node-{redis.cluster.key_slot(key.encode()) % 3}")

    def hset(self, key, mapping):
        self.keys[key] = mapping

    def expire(self, key, seconds):
        assert key in self.keys and seconds > 0

    def delete(self, key):
        self.deleted.append(key)
        self.keys.pop(key, None)

    def count_owned(self, owner):
        assert {fields["uuid"] for fields in self.keys.values()} == {owner}
        return min(self.visible, len(self.keys))


def test_the_search_probe_accepts_a_coordinated_cluster_and_refuses_one_shard_answers():
    from keel.stores.key_layout import ClusterSearchUnavailable, require_search_coordinator

    coordinated = _FakeCluster(visible=3)
    require_search_coordinator(coordinated, INDEX, coordinated.count_owned)
    assert len(coordinated.deleted) == 3 and not coordinated.keys  # one probe per shard, all removed
    assert all(key.startswith(f"{INDEX}:child:{{") for key in coordinated.deleted)
    assert {coordinated.get_node_from_key(key).name for key in coordinated.deleted} == {"node-0", "node-1", "node-2"}
    one_shard = _FakeCluster(visible=1)
    with pytest.raises(ClusterSearchUnavailable, match="saw 1 of the 3 shards"):
        require_search_coordinator(one_shard, INDEX, one_shard.count_owned)
    assert not one_shard.keys
