"""The options every Redis and MongoDB client Keel makes is given: credentials from the environment,
TLS files, pool sizes, timeouts and the retry that bounds a call to a dead Redis.

One place, so the health checks (``keel servers status``), the stores and the checkpointer connect
the same way: a server that needs a password or TLS is reachable by all of them or by none.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Any

from keel.core.settings.connection import REDIS_CLUSTER_SCHEMES, ConnectionSettings

# Query parameters whose value is a secret in a connection URL (matched case-insensitively, by part).
_SECRET_PARAMETER_PARTS = ("password", "passwd", "token", "secret", "apikey", "api_key")
_HIDDEN = "***"


def redact(url: str) -> str:
    """The URL with any password (user:password@ or a password/token query parameter) replaced, fit for
    messages, logs and status output."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is not None:
        user, _, host = parts.netloc.rpartition("@")
        name = user.split(":", 1)[0]
        parts = parts._replace(netloc=f"{name}:{_HIDDEN}@{host}")
    if parts.query:
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if any(_is_secret(key) for key, _ in pairs):
            hidden = [(key, _HIDDEN if _is_secret(key) else value) for key, value in pairs]
            parts = parts._replace(query=urllib.parse.urlencode(hidden, safe="*"))
    return urllib.parse.urlunsplit(parts)


def _is_secret(parameter: str) -> bool:
    lowered = parameter.lower()
    return any(part in lowered for part in _SECRET_PARAMETER_PARTS)


_SERVER_CREDENTIALS = {
    "redis": ("redis_username", "redis_password", "redis_tls_ca_file", "redis_tls_cert_file", "redis_tls_key_file"),
    "mongo": ("mongodb_username", "mongodb_password", "mongodb_tls_ca_file", "mongodb_tls_cert_key_file"),
}


def without_credentials(cfg: ConnectionSettings, server: str) -> ConnectionSettings:
    """``cfg`` without the credentials and TLS files of ``server`` ("redis" or "mongo"): Keel's embedded
    servers listen on loopback without either, so a deployment's REDIS_PASSWORD must not be sent to them."""
    return dataclasses.replace(cfg, **dict.fromkeys(_SERVER_CREDENTIALS[server]))


def connection_key(cfg: ConnectionSettings) -> tuple:
    """The connection settings' values, hashable: clients are cached per URL and these."""
    return tuple(getattr(cfg, item.name) for item in dataclasses.fields(ConnectionSettings))


# --- Redis -----------------------------------------------------------------------------------------


def is_redis_cluster_url(url: str) -> bool:
    """A redis+cluster:// or rediss+cluster:// URL names a seed node of a Redis Cluster."""
    return urllib.parse.urlsplit(url).scheme.lower() in REDIS_CLUSTER_SCHEMES


def plain_redis_url(url: str) -> str:
    """The URL redis-py understands: redis+cluster:// -> redis://, rediss+cluster:// -> rediss://."""
    scheme, rest = url.split("://", 1)
    return f"{scheme.lower().removesuffix('+cluster')}://{rest}"


def redis_options(url: str, cfg: ConnectionSettings, connect_timeout_s: float) -> dict[str, Any]:
    """Keyword arguments for redis-py's ``from_url`` (single server or cluster) for ``url``."""
    from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.retry import Retry

    backoff = (
        ExponentialWithJitterBackoff(base=cfg.redis_retry_backoff_s / 10, cap=cfg.redis_retry_backoff_s)
        if cfg.redis_retry_backoff_s > 0
        else NoBackoff()
    )
    options: dict[str, Any] = {
        "socket_connect_timeout": connect_timeout_s,
        "socket_timeout": cfg.redis_socket_timeout_s,
        # Only a failed connection is retried: a command that timed out waiting for its reply may have
        # run (an EXEC, a rate-limit script), and a hung Redis then costs one socket timeout.
        "retry": Retry(backoff, cfg.redis_retries, supported_errors=(RedisConnectionError, ConnectionError)),
        "max_connections": cfg.redis_max_connections,
    }
    if cfg.redis_username:
        options["username"] = cfg.redis_username
    if cfg.redis_password:
        options["password"] = cfg.redis_password
    tls_files = {
        "ssl_ca_certs": cfg.redis_tls_ca_file,
        "ssl_certfile": cfg.redis_tls_cert_file,
        "ssl_keyfile": cfg.redis_tls_key_file,
    }
    given = {key: value for key, value in tls_files.items() if value}
    if given:
        if not plain_redis_url(url).lower().startswith("rediss://"):
            raise ValueError(
                f"Redis TLS files are set (KEEL_REDIS_TLS_*) but the Redis URL {redact(url)} is not a TLS URL: "
                "use rediss:// (or rediss+cluster://)"
            )
        options.update(given)
    return options


def make_redis(url: str, cfg: ConnectionSettings, connect_timeout_s: float, **overrides: Any):
    """A redis-py client for ``url``: ``redis.cluster.RedisCluster`` for a cluster URL, else ``redis.Redis``."""
    options = {**redis_options(url, cfg, connect_timeout_s), **overrides}
    if is_redis_cluster_url(url):
        database = urllib.parse.urlsplit(url).path.strip("/")
        if database not in ("", "0"):
            raise ValueError(f"a Redis Cluster has only database 0, but {redact(url)} names database {database}")
        # the cluster client asks a seed node for the slots at once: no node is a ConnectionError too
        return _as_connection_error(_outage_aware_cluster().from_url, plain_redis_url(url), **options)
    import redis

    return redis.Redis.from_url(url, **options)


def _outage_aware_cluster() -> type:
    """redis-py's cluster client, whose "no node reachable" is a ``redis.ConnectionError`` as it is
    for one Redis: redis-py raises ``RedisClusterException`` there, which is no ``RedisError``, so
    Keel's outage handling (an ingest's per-file error, the limits kept in the process, the follow-up
    cache skipped) would not recognise a dead cluster and a request would fail with a 500."""
    global _OUTAGE_AWARE_CLUSTER
    if _OUTAGE_AWARE_CLUSTER is None:
        from redis.cluster import RedisCluster

        class OutageAwareRedisCluster(RedisCluster):
            def execute_command(self, *args: Any, **kwargs: Any) -> Any:
                return _as_connection_error(super().execute_command, *args, **kwargs)

            def pipeline(self, *args: Any, **kwargs: Any) -> Any:
                pipe = super().pipeline(*args, **kwargs)
                for name in ("execute", "execute_command"):
                    method = getattr(pipe, name)
                    setattr(pipe, name, lambda *a, _method=method, **k: _as_connection_error(_method, *a, **k))
                return pipe

        _OUTAGE_AWARE_CLUSTER = OutageAwareRedisCluster
    return _OUTAGE_AWARE_CLUSTER


_OUTAGE_AWARE_CLUSTER: type | None = None


def _as_connection_error(call: Any, *args: Any, **kwargs: Any) -> Any:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisClusterException, RedisError

    try:
        return call(*args, **kwargs)
    except RedisClusterException as error:
        if isinstance(error, RedisError):
            raise
        raise RedisConnectionError(f"Redis Cluster unavailable: {error}") from error


# --- MongoDB ---------------------------------------------------------------------------------------


def mongo_options(cfg: ConnectionSettings, connect_timeout_s: float) -> dict[str, Any]:
    """Keyword arguments for ``pymongo.MongoClient``; they take precedence over the URI's own options."""
    connect_ms = int(connect_timeout_s * 1000)
    options: dict[str, Any] = {
        "serverSelectionTimeoutMS": connect_ms,
        "connectTimeoutMS": connect_ms,
        "socketTimeoutMS": int(cfg.mongodb_socket_timeout_s * 1000),
        "maxPoolSize": cfg.mongodb_max_pool_size,
    }
    if cfg.mongodb_username:
        options["username"] = cfg.mongodb_username
    if cfg.mongodb_password:
        options["password"] = cfg.mongodb_password
    if cfg.mongodb_tls_ca_file or cfg.mongodb_tls_cert_key_file:
        options["tls"] = True
        if cfg.mongodb_tls_ca_file:
            options["tlsCAFile"] = cfg.mongodb_tls_ca_file
        if cfg.mongodb_tls_cert_key_file:
            options["tlsCertificateKeyFile"] = cfg.mongodb_tls_cert_key_file
    return options


def make_mongo(uri: str, cfg: ConnectionSettings, connect_timeout_s: float, **overrides: Any):
    """A MongoDB client with Keel's timeouts and pool options (``overrides`` win)."""
    from pymongo import MongoClient

    return MongoClient(uri, **{**mongo_options(cfg, connect_timeout_s), **overrides})


def bearer_headers(api_key: str) -> dict[str, str]:
    """The Authorization header OpenAI-compatible servers and TEI take an API key in."""
    return {"Authorization": f"Bearer {api_key}"}
