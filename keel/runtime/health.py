"""Health checks of the servers Keel talks to: None when a server is usable, else a short reason,
each bounded by its timeout so that a hung server is a reason, never a hang."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.client_options import (
    is_redis_cluster_url,
    make_mongo,
    make_redis,
    without_credentials,
)
from keel.runtime.processes import LOOPBACK

REQUIRED_REDIS_MODULES = ("search",)  # what Keel itself needs from any Redis
REDIS, MONGO = "redis", "mongo"  # the servers' names, as servers.py names them


def redis_health(
    url: str,
    timeout_s: float,
    required_modules: tuple[str, ...] = REQUIRED_REDIS_MODULES,
    cfg: RuntimeSettings | None = None,
) -> str | None:
    """None when Redis answers with the modules Keel needs, signing in and using TLS as the stores will
    (keel/runtime/client_options.py) for a configured server (``cfg``); a cluster URL is checked through
    the cluster client. Without ``cfg`` (the embedded server) no credentials are sent."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        client = make_redis(
            url, cfg or without_credentials(RuntimeSettings(), REDIS), timeout_s, socket_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
        )
    except ValueError as exc:
        return f"not a valid Redis URL: {exc}"
    # the cluster client asks a seed node for the slots at once; it raises RedisClusterException, not a RedisError
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        client.ping()
        modules = (
            client.execute_command("MODULE LIST", target_nodes=client.RANDOM)
            if is_redis_cluster_url(url)
            else client.module_list()
        )
        loaded = {_text(_module_name(module)) for module in modules}
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    missing = [name for name in required_modules if name not in loaded]
    if missing:
        return f"module(s) {missing} not loaded (MODULE LIST: {sorted(loaded)}); Keel needs Redis Stack or Redis 8+"
    return None


def _module_name(module: dict | list) -> bytes | str | None:
    if isinstance(module, dict):  # redis-py parses MODULE LIST for a single server
        return module.get(b"name", module.get("name"))
    return dict(zip(module[::2], module[1::2], strict=False)).get(b"name")  # raw reply through the cluster client


def _text(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def mongo_health(uri: str, timeout_s: float, cfg: RuntimeSettings | None = None) -> str | None:
    """None when the MongoDB at ``uri`` answers a ping in time, else why not."""
    from pymongo.errors import PyMongoError

    try:
        client = make_mongo(
            uri, cfg or without_credentials(RuntimeSettings(), MONGO), timeout_s, socketTimeoutMS=int(timeout_s * 1000), appname="keel-health"
        )
    except (PyMongoError, ValueError) as exc:
        return f"not a valid MongoDB URI: {exc}"
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        return f"{type(exc).__name__}: {str(exc).split(', Timeout:')[0]}"
    finally:
        client.close()
    return None


def http_health(base_url: str, timeout_s: float, api_key: str | None = None) -> str | None:
    """An OpenAI-compatible server answers GET /v1/models (TGI also answers /health); ``api_key`` goes as
    a bearer token (vLLM's and TEI's --api-key)."""
    host = urllib.parse.urlsplit(base_url).hostname
    if host is None:
        return "not a valid http(s) URL"
    # Loopback servers are reached directly, whatever proxy the environment configures.
    handlers = [urllib.request.ProxyHandler({})] if host in (LOOPBACK, "localhost", "::1") else []
    opener = urllib.request.build_opener(*handlers)
    reason = "no answer"
    for path in ("/v1/models", "/health"):
        try:
            request = urllib.request.Request(base_url + path)
            if api_key:
                request.add_header("Authorization", f"Bearer {api_key}")
            with opener.open(request, timeout=timeout_s) as response:
                if response.status == 200:
                    return None
                reason = f"GET {path} answered HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            reason = f"GET {path} answered HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return f"unreachable: {getattr(exc, 'reason', exc)}"
    return reason
