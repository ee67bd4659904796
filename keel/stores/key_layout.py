"""Key names of Keel's chunk store on one Redis and on a Redis Cluster.

A cluster spreads keys over 16,384 hash slots, and a transaction (MULTI/EXEC), a WATCH or an MGET may
only touch keys of one slot. Keel writes a document atomically (its children, parents, manifest
and the user's document set in one MULTI/EXEC) and reads a user's parents with one MGET, so on a
cluster every key of one user carries the user's key as a hash tag, ``{<user_key>}``: Redis hashes
only the text between the braces, and the user's keys share a slot.

On a single Redis nothing changes: the keys are named as they always were, so documents users
stored before keep being found. A deployment that moves from one Redis to a cluster copies its
keys under the tagged names (``copy_to_cluster``); the RediSearch index's prefix (``N:child:``) is
the same in both layouts. Search on a cluster needs RediSearch's coordinator, checked when the
index is opened (``require_search_coordinator``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def is_cluster(client: Any) -> bool:
    """Whether ``client`` is redis-py's cluster client (keys then carry slot tags)."""
    from redis.cluster import RedisCluster

    return isinstance(client, RedisCluster)


def slot_tag(user_key: str) -> str:
    """The hash tag that puts every key of one user in one slot."""
    return "{" + user_key + "}"


def tagged_id(chunk_id: str) -> str:
    """A chunk id (``<user_key>:<rest>``) as it is named on a cluster: ``{<user_key>}:<rest>``."""
    head, separator, rest = chunk_id.partition(":")
    return f"{slot_tag(head)}{separator}{rest}"


def untagged_id(text: str) -> str:
    """The chunk id inside a (possibly tagged) key suffix: ``{abc}:d:1`` -> ``abc:d:1``."""
    if text.startswith("{") and "}" in text:
        close = text.index("}")
        return text[1:close] + text[close + 1 :]
    return text


def get_many(client: Any, keys: Sequence[str]) -> list[Any]:
    """MGET of ``keys``; on a cluster, keys of different slots are read per slot (in the given order)."""
    if not keys:
        return []
    return list(client.mget_nonatomic(keys)) if is_cluster(client) else list(client.mget(keys))


class ClusterSearchUnavailable(RuntimeError):
    """The cluster's RediSearch has no coordinator: an index made through it lives on one shard only,
    so a search would silently miss the documents stored on the others."""


PROBE_TTL_S = 60  # a probe key left behind by a crash expires on its own


def require_search_coordinator(
    client: Any, index_name: str, count_owned: Callable[[str], int], owner_field: str = "uuid"
) -> None:
    """Check that a search through this cluster sees every shard: one probe chunk is written to a slot
    of each primary (under the index's prefix, owned by a user id no user has) and
    ``count_owned(owner)`` (the store's own filtered count) must find them all. Without a coordinator
    each shard answers for its own keys only, and a search would silently miss part of a user's
    documents; that is refused instead. The probes are removed."""
    from uuid import uuid4

    owner = f"keelprobe{uuid4().hex}"  # letters and digits: a tag query needs no escaping
    primaries = {node.name for node in client.get_primaries()}
    probes: dict[str, str] = {}
    for number in range(100 * len(primaries) + 1000):  # slots are spread evenly: a few hundred tries at most
        key = f"{index_name}:child:{slot_tag(f'{owner}{number}')}:probe"
        probes.setdefault(client.get_node_from_key(key).name, key)
        if len(probes) == len(primaries):
            break
    try:
        for key in probes.values():
            client.hset(key, mapping={owner_field: owner, "text": "probe"})
            client.expire(key, PROBE_TTL_S)
        found = count_owned(owner)
    finally:
        for key in probes.values():
            client.delete(key)
    if found < len(probes):
        raise ClusterSearchUnavailable(
            f"a search of the RediSearch index {index_name!r} saw {found} of the {len(probes)} shards of this "
            "Redis Cluster: its search has no coordinator, and answers would silently miss documents stored on "
            "the other shards. Use a cluster whose search spans its shards (Redis Enterprise / Redis Cloud, or "
            "Redis 8 with cluster search), or a single Redis Stack (docs/deployment.md)"
        )


# --- moving a single Redis's documents to a cluster ------------------------------------------------


def cluster_key(key: str, index_name: str) -> str:
    """The name a single-Redis key of the chunk store (index ``index_name``) takes on a cluster; other
    keys keep their name."""
    for part in ("child", "parent", "doc", "docs"):
        prefix = f"{index_name}:{part}:"
        if key.startswith(prefix) and not key[len(prefix) :].startswith("{"):
            return prefix + tagged_id(key[len(prefix) :])
    return key


def copy_to_cluster(source: Any, cluster: Any, index_name: str, batch: int = 500) -> int:
    """Copy every key of the chunk store from a single Redis (``source``) to a cluster under the
    tagged names, keeping each key's value and remaining TTL; the manifests' lists of keys are
    rewritten to the new names. The source is left as it was. Returns the number of keys copied."""
    copied = 0
    for keys in _batches(source.scan_iter(match=f"{index_name}:*", count=batch), batch):
        with source.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.dump(key)
                pipe.pttl(key)
            replies = pipe.execute()
        with cluster.pipeline(transaction=False) as pipe:
            for key, dumped, pttl in zip(keys, replies[::2], replies[1::2], strict=False):
                if dumped is None:
                    continue  # expired meanwhile
                text = key.decode() if isinstance(key, bytes) else key
                pipe.restore(cluster_key(text, index_name), max(pttl, 0), dumped, replace=True)
                copied += 1
            pipe.execute()
    for key in cluster.scan_iter(match=f"{index_name}:doc:*", target_nodes=cluster.ALL_NODES):
        raw = cluster.hget(key, "keys")
        if raw:
            names = [cluster_key(name, index_name) for name in json.loads(raw)]
            cluster.hset(key, "keys", json.dumps(names))
    return copied


def _batches(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
