"""Clients for the configured (or embedded) servers, created once per process and URL."""

from __future__ import annotations

from functools import lru_cache

from keel.core.settings import RuntimeSettings, VectorStoreSettings
from keel.runtime.servers import mongodb_uri, redis_url
from keel.stores.vector_store import RedisChunkStore


def get_redis(cfg: RuntimeSettings):
    """A redis-py client for the configured URL, or for the embedded Redis Stack (started if needed)."""
    return _redis_client(redis_url(cfg), cfg.connect_timeout_s)


@lru_cache(maxsize=8)
def _redis_client(url: str, timeout: float):
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=timeout, health_check_interval=30)


def get_mongo(cfg: RuntimeSettings):
    return _mongo_client(mongodb_uri(cfg), cfg.connect_timeout_s)


@lru_cache(maxsize=8)
def _mongo_client(uri: str, timeout: float):
    from pymongo import MongoClient

    return MongoClient(uri, serverSelectionTimeoutMS=int(timeout * 1000), connect=False)


def get_vector_store(cfg: VectorStoreSettings, embeddings):
    """Keel's RediSearch chunk store for this configuration (index created if missing)."""
    return _store(get_redis(cfg), embeddings, cfg.index_name, cfg.vector_algorithm, cfg.ttl_seconds, cfg)


_stores: dict[tuple, object] = {}


def _store(client, embeddings, index_name, algorithm, ttl, cfg):
    key = (id(client), id(embeddings), index_name, algorithm, ttl)
    if key not in _stores:
        store = RedisChunkStore(client, embeddings, cfg)
        store.ensure_index()
        _stores[key] = store
    return _stores[key]
