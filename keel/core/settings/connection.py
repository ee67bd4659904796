"""How Keel connects to a production Redis, MongoDB and model servers: credentials, TLS files, pool
sizes, socket timeouts and how long a call to a dead Redis may take.

Secrets (passwords, API tokens) come from the environment, never from a URL: a URL is printed by
``keel servers status`` and by error messages, and a secret in it would end up in logs. Secret
fields are left out of the settings' ``repr`` for the same reason. Every field here is a
deployment setting: a request can never choose where the server connects or with what.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope

# URL schemes that name a Redis Cluster seed node: Keel then talks to the cluster with redis-py's
# cluster client (slots, redirects) instead of a single-server client.
REDIS_CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
REDIS_SCHEMES = ("redis", "rediss", "unix", *REDIS_CLUSTER_SCHEMES)


def env_value(name: str) -> str | None:
    """The environment variable's value, stripped; None when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def from_env(variable: str, doc: str, fallback: str | None = None, secret: bool = False, **marks: Any) -> Any:
    """A setting whose default is read from ``variable`` when a configuration is made (``fallback`` when
    unset); a malformed value is an error naming the variable (keel/core/settings/checks.py). A
    ``secret`` one is kept out of the settings' repr."""
    return field(
        default_factory=lambda: env_value(variable) or fallback,
        repr=not secret,
        metadata={"doc": doc, "env": variable, **marks},
    )


def number_from_env(variable: str, default: int | float, doc: str, **marks: Any) -> Any:
    """A number whose default (``default``) a deployment may replace with ``variable``, read when a
    configuration is made. A value that is not a number of the default's type is kept as the text it
    is, so the settings check refuses it naming the variable (keel/core/settings/checks.py)."""
    kind = type(default)

    def read() -> int | float | str:
        raw = env_value(variable)
        if raw is None:
            return default
        try:
            return kind(raw)
        except ValueError:
            return raw

    return field(default_factory=read, metadata={"doc": doc, "env": variable, **marks})


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class ConnectionSettings(CheckedSettings):
    """Credentials, TLS, pools and timeouts of the connections to Redis, MongoDB and the model servers."""

    # --- Redis -------------------------------------------------------------------------------------
    redis_username: str | None = from_env(
        "REDIS_USERNAME", "Redis ACL user Keel signs in as; None = the default user (or the URL's).")
    redis_password: str | None = from_env(
        "REDIS_PASSWORD", "Redis password (AUTH), from the environment so it never sits in a logged URL; None = the "
        "URL's, if any.", secret=True)
    redis_tls_ca_file: str | None = from_env(
        "KEEL_REDIS_TLS_CA_FILE", "PEM file of the CA that signed the Redis server's certificate (with a rediss:// "
        "URL); None = the system's CAs.")
    redis_tls_cert_file: str | None = from_env(
        "KEEL_REDIS_TLS_CERT_FILE", "Keel's client certificate (PEM) when Redis asks for one (tls-auth-clients).")
    redis_tls_key_file: str | None = from_env(
        "KEEL_REDIS_TLS_KEY_FILE", "Private key (PEM) of redis_tls_cert_file.")
    redis_max_connections: int = number_from_env(
        "KEEL_REDIS_MAX_CONNECTIONS", 64, "Most connections one Keel process opens to Redis (per server of a "
        "cluster); a request past it waits for a free one.", **AT_LEAST_ONE
    )
    redis_socket_timeout_s: float = number_from_env(
        "KEEL_REDIS_SOCKET_TIMEOUT_S", 5.0, "How long Keel waits for Redis to answer one command on an open "
        "connection, in seconds; a command that times out is not re-sent (it may have run).", **POSITIVE
    )
    redis_retries: int = number_from_env(
        "KEEL_REDIS_RETRIES", 1, "How often a Redis command whose connection failed is tried again; a call to a "
        "dead Redis takes at most (1 + this) x connect_timeout_s + the backoffs, to a hung one "
        "redis_socket_timeout_s.", **NON_NEGATIVE
    )
    redis_retry_backoff_s: float = number_from_env(
        "KEEL_REDIS_RETRY_BACKOFF_S", 0.25, "Longest pause before a Redis retry, in seconds (exponential with jitter "
        "from a tenth of it).", **NON_NEGATIVE
    )

    # --- MongoDB ------------------------------------------------------------------------------------
    mongodb_username: str | None = from_env(
        "MONGODB_USERNAME", "MongoDB user Keel signs in as; None = the URI's (or none).")
    mongodb_password: str | None = from_env(
        "MONGODB_PASSWORD", "MongoDB password, from the environment so it never sits in a logged URI; None = the "
        "URI's, if any.", secret=True)
    mongodb_tls_ca_file: str | None = from_env(
        "KEEL_MONGODB_TLS_CA_FILE", "PEM file of the CA that signed MongoDB's certificate; setting it turns TLS on.")
    mongodb_tls_cert_key_file: str | None = from_env(
        "KEEL_MONGODB_TLS_CERT_KEY_FILE", "Keel's client certificate and key in one PEM file (MongoDB x.509 or "
        "requireTLS with client certificates); setting it turns TLS on.")
    mongodb_max_pool_size: int = number_from_env(
        "KEEL_MONGODB_MAX_POOL_SIZE", 100, "Most connections one Keel process opens to each MongoDB server "
        "(pymongo maxPoolSize).", **AT_LEAST_ONE
    )
    mongodb_socket_timeout_s: float = number_from_env(
        "KEEL_MONGODB_SOCKET_TIMEOUT_S", 30.0, "How long Keel waits for MongoDB to answer one operation, in seconds "
        "(pymongo socketTimeoutMS).", **POSITIVE
    )

    # --- model servers ---------------------------------------------------------------------------------
    llm_api_key: str | None = from_env(
        "KEEL_LLM_API_KEY", "Bearer token of the chat model server (TGI's or vLLM's --api-key); None = no "
        "Authorization header.", secret=True)
    embedding_api_key: str | None = from_env(
        "KEEL_EMBEDDING_API_KEY", "Bearer token of the embedding server (TEI --api-key); None = no Authorization "
        "header.", secret=True)
