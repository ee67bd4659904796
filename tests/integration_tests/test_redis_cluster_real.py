"""Keel's stores on a real Redis Cluster of three masters (the embedded Redis Stack's binary with
RediSearch loaded, started here and stopped by this module), reached through a redis+cluster:// URL
the way a deployment configures it.

What works on a cluster is shown on its own: one document's write stays one transaction because
every key of a user carries the user's hash tag; the document catalog (list, TTL refresh, delete,
re-ingest), the parent docstore (MGET, across users' slots too), the follow-up cache, and the
per-user rate and wrong-key bound the replicas share; and a cluster speaking TLS only, with a
password, reached through rediss+cluster://. Search
itself (FT.SEARCH over every shard) needs the search coordinator of Redis 8 / Redis Enterprise,
which Redis Stack's module lacks, so the index is not created here (docs/deployment.md).
Documents stored on a single Redis keep their names there, and copy_to_cluster moves them to the
cluster's names, checked against the session's embedded Redis."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from langchain_core.documents import Document
from redis.cluster import RedisCluster

from keel.core.configuration import Configuration
from keel.runtime import servers
from keel.runtime.client_options import make_redis
from keel.stores.connections import get_redis, get_vector_store
from keel.stores.key_layout import ClusterSearchUnavailable, copy_to_cluster
from keel.stores.chunk_store import RedisChunkStore
from retrievers.followup_cache import FollowUpCache
from tests.fakes import BagOfWordsEmbeddings
from tests.redis_processes import redis_cluster


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory):
    with redis_cluster(tmp_path_factory.mktemp("cluster"), masters=3, modules=("redisearch.so", "rejson.so")) as ports:
        yield f"redis+cluster://127.0.0.1:{ports[0]}"


@pytest.fixture
def cluster_cfg(cluster_url):
    return Configuration(redis_url=cluster_url, index_name=f"cluster_{uuid.uuid4().hex[:8]}", connect_timeout_s=2.0)


def _store(client, cfg) -> RedisChunkStore:
    store = RedisChunkStore(client, BagOfWordsEmbeddings(), cfg)
    # FT.CREATE on one shard would index only that shard's keys: a cluster needs the search
    # coordinator for the index (not in Redis Stack's module), so this test leaves the index out.
    store._index_ready = True
    return store


def _document(store: RedisChunkStore, user_id: str, doc_id: str, pages: int = 2, words: str = "lighthouse keeper"):
    owner = store._user_key(user_id)
    parents, children = [], []
    for page in range(pages):
        meta = {"user_id": user_id, "doc_id": doc_id, "source": f"{doc_id}.pdf", "page": page + 1,
                "total_pages": pages, "conversation_id": "c1"}
        parent_id = f"{owner}:{doc_id}:p{page}"
        parents.append(Document(id=parent_id, page_content=f"page {page + 1} of {doc_id}: {words}", metadata=meta))
        children.append(Document(id=f"{parent_id}:c0", page_content=f"{words} {page}",
                                 metadata={**meta, "parent_id": parent_id}))
    return parents, children


def _slot(client: RedisCluster, key: str) -> int:
    return client.keyslot(key)


def test_keel_reaches_the_cluster_from_a_cluster_url_and_status_says_healthy(cluster_cfg):
    client = get_redis(cluster_cfg)
    assert isinstance(client, RedisCluster)
    assert len(client.get_primaries()) == 3
    row = next(row for row in servers.status(cluster_cfg) if row.name == "redis")
    assert row.healthy and not row.managed, row.detail


def test_search_on_a_cluster_without_a_search_coordinator_is_refused_naming_the_problem(cluster_cfg):
    """Redis Stack's RediSearch answers a search from the shard it runs on only; searching would
    silently miss the documents of the other shards, so Keel refuses to use it (its probes removed)."""
    with pytest.raises(ClusterSearchUnavailable, match=r"saw 1 of the 3 shards .*no coordinator"):
        get_vector_store(cluster_cfg, BagOfWordsEmbeddings())
    client = get_redis(cluster_cfg)
    assert not list(client.scan_iter(match=f"{cluster_cfg.index_name}:child:*", target_nodes=client.ALL_NODES))


def test_a_documents_keys_share_its_users_slot_and_users_spread_over_the_masters(cluster_cfg):
    client = get_redis(cluster_cfg)
    store = _store(client, cluster_cfg)
    owners = set()
    for number in range(12):
        user = f"user-{number}"
        parents, children = _document(store, user, "handbook")
        assert store.add_document(parents, children) == 2
        keys = [store._manifest_key(user, "handbook"), store._user_docs_key(user),
                *(store.child_key(child.id) for child in children), *(store.parent_key(p.id) for p in parents)]
        assert all(client.exists(key) for key in keys)
        assert len({_slot(client, key) for key in keys}) == 1, keys
        assert all(key.startswith(f"{cluster_cfg.index_name}:") for key in keys)
        assert store.child_key(children[0].id).startswith(f"{cluster_cfg.index_name}:child:{{")  # the index prefix
        owners.add(client.get_node_from_key(keys[0]).name)
    assert len(owners) >= 2, "twelve users all hashed to one master"


def test_the_document_catalog_works_on_the_cluster(cluster_cfg):
    store = _store(get_redis(cluster_cfg), cluster_cfg)
    parents, children = _document(store, "ada", "handbook", pages=3)
    store.add_document(parents, children)
    store.add_document(*_document(store, "ada", "policy", pages=1))
    listed = store.list_documents("ada")
    assert [(doc["doc_id"], doc["pages"], doc["children"]) for doc in listed] == [("handbook", 3, 3), ("policy", 1, 1)]
    assert store.conversation_documents("ada", "c1") == ["handbook", "policy"]
    assert store.refresh_ttl("ada") == 2
    # re-ingesting replaces the old copy in one transaction: the dropped page's keys are gone
    smaller_parents, smaller_children = _document(store, "ada", "handbook", pages=1)
    store.add_document(smaller_parents, smaller_children)
    assert store.get_parents([parents[2].id]) == []
    assert store.list_documents("ada")[0]["pages"] == 1
    assert store.delete_document("ada", "handbook") is True
    assert store.get_parents([smaller_parents[0].id]) == []
    assert [doc["doc_id"] for doc in store.list_documents("ada")] == ["policy"]
    assert store.delete_document("ada", "handbook") is False


def test_the_parent_docstore_reads_parents_of_several_users_slots(cluster_cfg):
    client = get_redis(cluster_cfg)
    store = _store(client, cluster_cfg)
    ada_parents, ada_children = _document(store, "ada", "handbook", words="ada's lighthouse")
    bob_parents, bob_children = _document(store, "bob", "handbook", words="bob's harbour")
    store.add_document(ada_parents, ada_children)
    store.add_document(bob_parents, bob_children)
    assert _slot(client, store.parent_key(ada_parents[0].id)) != _slot(client, store.parent_key(bob_parents[0].id))
    ids = [bob_parents[1].id, ada_parents[0].id, "missing:x:p0", ada_parents[1].id]
    assert [parent.id for parent in store.get_parents(ids)] == [bob_parents[1].id, ada_parents[0].id, ada_parents[1].id]
    assert [parent.id for parent in store.get_parents(ids, user_id="ada")] == [ada_parents[0].id, ada_parents[1].id]
    assert store.get_parents([ada_parents[0].id])[0].page_content.endswith("ada's lighthouse")


def test_the_follow_up_cache_works_on_the_cluster(cluster_cfg):
    cache = FollowUpCache(get_redis(cluster_cfg), namespace=cluster_cfg.index_name, ttl_seconds=60)
    passage = {"text": "The lighthouse was built in 1874.", "source": "handbook.pdf", "page": 1}
    cache.put("ada", "conversation-1", "When was it built?", [passage], doc_ids=["handbook"], parent_ids=["p1"])
    cache.put("bob", "conversation-1", "Who kept it?", [passage])
    cached = cache.get("ada", "conversation-1")
    assert cached is not None and cached.question == "When was it built?"
    assert cache.get("ada", "conversation-2") is None
    assert cache.clear("ada", "conversation-1") is True
    assert cache.get("ada", "conversation-1") is None and cache.get("bob", "conversation-1") is not None


def test_a_single_redis_keeps_its_names_and_its_documents_move_to_the_cluster(cluster_cfg, redis_client, keel_config):
    """Documents users stored on one Redis stay where they are (their names do not change), and
    copy_to_cluster brings them to a cluster under the tagged names, manifests rewritten."""
    index = cluster_cfg.index_name
    single_cfg = Configuration(keel_home=keel_config.keel_home, redis_url=None, index_name=index)
    single = RedisChunkStore(get_redis(single_cfg), BagOfWordsEmbeddings(), single_cfg)
    single._index_ready = True  # the same write path as the cluster's; the index is not what is tested
    parents, children = _document(single, "ada", "handbook", pages=2)
    try:
        single.add_document(parents, children)
        owner = single._user_key("ada")
        assert redis_client.exists(f"{index}:child:{children[0].id}", f"{index}:parent:{parents[0].id}",
                                   f"{index}:doc:{owner}:handbook", f"{index}:docs:{owner}") == 4
        cluster_client = get_redis(cluster_cfg)
        copied = copy_to_cluster(redis_client, cluster_client, index)
        assert copied == 6  # 2 children, 2 parents, the manifest, the user's document set
        cluster = _store(cluster_client, cluster_cfg)
        assert [doc["doc_id"] for doc in cluster.list_documents("ada")] == ["handbook"]
        assert [parent.id for parent in cluster.get_parents([p.id for p in parents], user_id="ada")] == [
            parents[0].id, parents[1].id]
        assert 0 < cluster_client.ttl(cluster.parent_key(parents[0].id)) <= cluster_cfg.ttl_seconds
        # the manifest names the cluster's keys, so deleting there leaves nothing behind
        assert cluster.delete_document("ada", "handbook") is True
        assert not any(cluster_client.exists(cluster.child_key(c.id)) for c in children)
        assert not any(cluster_client.exists(cluster.parent_key(p.id)) for p in parents)
        # the single Redis was left as it was
        assert [doc["doc_id"] for doc in single.list_documents("ada")] == ["handbook"]
    finally:
        single.delete_document("ada", "handbook")


def test_the_shared_rate_limit_and_wrong_key_bound_count_in_the_cluster(cluster_cfg):
    """The limits every replica shares run as Lua scripts in the cluster (a failure there would fall
    back to a count in the process, so the test reads the counts in Redis itself)."""
    from keel.server.shared_limits import SharedFailedAttempts, SharedRateLimiter

    client = get_redis(cluster_cfg)
    rate = SharedRateLimiter(client, cluster_cfg.index_name, per_minute=1, burst=2)
    assert [rate.take("ada") > 0 for _ in range(3)] == [False, False, True]
    assert rate.take("bob") == 0
    assert client.exists(rate.key("ada"), rate.key("bob")) == 2
    failures = SharedFailedAttempts(client, cluster_cfg.index_name, limit=2, window_s=60, tracked=100)
    assert failures.retry_after("203.0.113.7") == 0
    assert failures.fail("203.0.113.7") is False
    assert failures.fail("203.0.113.7") is True
    assert failures.retry_after("203.0.113.7") > 0 and failures.retry_after("203.0.113.8") == 0
    assert client.exists(failures.times_key, failures.recent_key) == 2
    assert client.keyslot(failures.times_key) == client.keyslot(failures.recent_key)


def test_keel_uses_a_tls_cluster_with_a_password_from_the_environment(tmp_path, monkeypatch):
    """rediss+cluster:// with REDIS_PASSWORD and the CA file: the cluster client discovers the other
    shards and speaks TLS with the same options to each, and a document is written over them."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    with redis_cluster(tmp_path / "tls-cluster", masters=3, modules=("redisearch.so",), tls=(cert, key),
                       password="hunter2") as ports:
        monkeypatch.setenv("REDIS_PASSWORD", "hunter2")
        cfg = Configuration(redis_url=f"rediss+cluster://127.0.0.1:{ports[0]}", redis_tls_ca_file=str(cert),
                            index_name=f"cluster_{uuid.uuid4().hex[:8]}", connect_timeout_s=3.0)
        row = next(row for row in servers.status(cfg) if row.name == "redis")
        assert row.healthy, row.detail
        client = get_redis(cfg)
        assert isinstance(client, RedisCluster) and len(client.get_primaries()) == 3
        store = _store(client, cfg)
        for user in ("ada", "bob", "cy", "dee"):
            store.add_document(*_document(store, user, "handbook"))
            assert [doc["doc_id"] for doc in store.list_documents(user)] == ["handbook"]
        monkeypatch.delenv("REDIS_PASSWORD")
        refused = next(row for row in servers.status(Configuration(
            redis_url=cfg.redis_url, redis_tls_ca_file=str(cert), connect_timeout_s=3.0)) if row.name == "redis")
        assert not refused.healthy and refused.detail


def test_a_cluster_that_went_away_is_a_redis_connection_error_keels_outage_handling_knows(tmp_path):
    """redis-py's cluster client says "no node reachable" with RedisClusterException, which is no
    RedisError: Keel's client turns it into redis.ConnectionError, so the outage paths that catch
    Redis errors (an ingest's per-file error, the limits kept in the process) work on a cluster too."""
    import redis

    from keel.server.shared_limits import SharedRateLimiter

    with redis_cluster(tmp_path / "dying", masters=3) as ports:
        cfg = Configuration(redis_url=f"redis+cluster://127.0.0.1:{ports[0]}", index_name="dying",
                            connect_timeout_s=1.0)
        client = make_redis(cfg.redis_url, cfg, cfg.connect_timeout_s)
        store = _store(client, cfg)
        store.add_document(*_document(store, "ada", "handbook"))
        rate = SharedRateLimiter(client, cfg.index_name, per_minute=60, burst=5)
        assert rate.take("ada") == 0
    calls = {
        "a read": lambda: client.get("anything"),
        "a pipeline": lambda: client.pipeline(transaction=False).get("a").get("b").execute(),
        "the catalog": lambda: store.list_documents("ada"),
        "a document write": lambda: store.add_document(*_document(store, "ada", "handbook")),
        "the parents": lambda: store.get_parents([f"{store._user_key('ada')}:handbook:p0"]),
    }
    for what, call in calls.items():
        with pytest.raises(redis.exceptions.ConnectionError):
            call()
    assert rate.take("ada") == 0  # counted in the process while Redis is away, not a crash
