"""Clients for the configured (or embedded) servers, created once per process and URL."""

from __future__ import annotations

import threading

from keel.core.settings import RuntimeSettings, VectorStoreSettings
from keel.runtime.client_options import connection_key, make_mongo, make_redis, without_credentials
from keel.runtime.servers import mongodb_uri, redis_url
from keel.stores.chunk_store import RedisChunkStore

# One client per server and connection settings, for the life of the process (each holds a pool).
_clients: dict[tuple, object] = {}
_lock = threading.Lock()


def get_redis(cfg: RuntimeSettings):
    """A redis-py client for the configured URL (``RedisCluster`` for a redis+cluster:// one), or for the
    embedded Redis Stack (started if needed), with the deployment's credentials, TLS, pool and retries."""
    url = redis_url(cfg)
    settings = cfg if cfg.redis_url else without_credentials(cfg, "redis")
    key = ("redis", url, cfg.connect_timeout_s, connection_key(settings))
    with _lock:
        if key not in _clients:
            _clients[key] = make_redis(url, settings, cfg.connect_timeout_s, health_check_interval=30)
        return _clients[key]


def get_mongo(cfg: RuntimeSettings):
    """A pymongo client for the configured URI or the embedded server, with the deployment's credentials,
    TLS files, pool size and timeouts."""
    uri = mongodb_uri(cfg)
    settings = cfg if cfg.mongodb_uri else without_credentials(cfg, "mongo")
    key = ("mongo", uri, cfg.connect_timeout_s, connection_key(settings))
    with _lock:
        if key not in _clients:
            _clients[key] = make_mongo(uri, settings, cfg.connect_timeout_s, connect=False)
        return _clients[key]


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
