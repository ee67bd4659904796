"""A production deployment's connection settings reach the clients: Redis and MongoDB credentials, TLS
files, pool sizes and timeouts reach redis-py and pymongo; API keys reach the chat model's and the
embedding server's HTTP requests; secrets never show in a URL that is printed or in the settings'
repr; the embedded servers get no credentials; a call to a Redis that never answers is bounded."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time

import pytest
from redis import exceptions as redis_errors

from keel.core.configuration import Configuration
from keel.runtime import servers
from keel.runtime.client_options import (
    is_redis_cluster_url,
    make_mongo,
    make_redis,
    plain_redis_url,
    redact,
    without_credentials,
)
from tests.ports import refused_port


@pytest.fixture(scope="module")
def pem_files(tmp_path_factory):
    """A self-signed certificate and its key (pymongo reads the CA file when its client is made)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    both = folder / "both.pem"
    both.write_text(cert.read_text() + key.read_text())
    return cert, key, both


# --- Redis -----------------------------------------------------------------------------------------

def test_redis_credentials_tls_pool_and_timeouts_reach_redis_py(pem_files):
    cert, key, _ = pem_files
    cfg = Configuration(
        redis_username="keel", redis_password="s3cret", redis_tls_ca_file=str(cert), redis_tls_cert_file=str(cert),
        redis_tls_key_file=str(key), redis_max_connections=7, redis_socket_timeout_s=2.5, redis_retries=2,
        redis_retry_backoff_s=0.5,
    )
    client = make_redis("rediss://redis.internal:6380/0", cfg, 1.5)
    pool = client.connection_pool
    options = pool.connection_kwargs
    assert (options["username"], options["password"]) == ("keel", "s3cret")
    assert (options["ssl_ca_certs"], options["ssl_certfile"], options["ssl_keyfile"]) == (str(cert), str(cert), str(key))
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (1.5, 2.5)
    assert pool.max_connections == 7
    assert options["retry"].get_retries() == 2
    retried = options["retry"]._supported_errors
    assert redis_errors.ConnectionError in retried and redis_errors.TimeoutError not in retried
    assert pool.connection_class.__name__ == "SSLConnection"


def test_redis_tls_files_with_a_plain_url_are_a_clear_error(pem_files):
    cfg = Configuration(redis_tls_ca_file=str(pem_files[0]))
    with pytest.raises(ValueError, match=r"not a TLS URL: use rediss://"):
        make_redis("redis://:hunter2@redis.internal:6379/0", cfg, 1.0)
    with pytest.raises(ValueError) as raised:
        make_redis("redis://:hunter2@redis.internal:6379/0", cfg, 1.0)
    assert "hunter2" not in str(raised.value)


def test_a_cluster_url_names_the_cluster_client_and_keeps_tls():
    assert is_redis_cluster_url("redis+cluster://10.0.0.1:7000") and is_redis_cluster_url("rediss+cluster://h:7000")
    assert not is_redis_cluster_url("redis://h:6379/0") and not is_redis_cluster_url("rediss://h:6379/0")
    assert plain_redis_url("rediss+cluster://h:7000") == "rediss://h:7000"
    assert plain_redis_url("redis+cluster://h:7000") == "redis://h:7000"
    with pytest.raises(ValueError, match="only database 0"):
        make_redis("redis+cluster://:hunter2@h:7000/3", Configuration(), 0.5)
    # the settings accept a cluster URL, and still refuse what is no Redis URL at all
    assert Configuration(redis_url="redis+cluster://h:7000").redis_url == "redis+cluster://h:7000"
    with pytest.raises(ValueError, match="redis_url"):
        Configuration(redis_url="http://h:7000")


@contextlib.contextmanager
def silent_server():
    """A loopback port that accepts connections and never answers (a hung server, a half-open path)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_ignore():
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_ignore, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def test_a_call_to_a_redis_that_never_answers_is_bounded_by_the_settings():
    """redis-py has no socket timeout by default: a hung Redis held a call for as long as the kernel
    kept the socket. Now it costs one socket timeout: a command that timed out is not re-sent (it may
    have run), only one whose connection failed is."""
    import redis

    with silent_server() as port:
        cfg = Configuration(redis_socket_timeout_s=0.3, redis_retries=1, redis_retry_backoff_s=0.05)
        client = make_redis(f"redis://127.0.0.1:{port}/0", cfg, 0.3)
        started = time.monotonic()
        with pytest.raises(redis.exceptions.TimeoutError):
            client.get("anything")
        elapsed = time.monotonic() - started
    # one try of 0.3 s, plus scheduling slack
    assert 0.25 <= elapsed < 1.5, elapsed


def test_a_mongodb_that_never_answers_fails_within_the_connect_timeout():
    from pymongo.errors import PyMongoError

    with silent_server() as port:
        client = make_mongo(f"mongodb://127.0.0.1:{port}/", Configuration(), 0.5, connect=False)
        started = time.monotonic()
        with pytest.raises(PyMongoError):
            client.admin.command("ping")
        elapsed = time.monotonic() - started
        client.close()
    assert elapsed < 3.0, elapsed


def test_the_embedded_redis_gets_no_credentials_and_a_configured_one_does(monkeypatch):
    from keel.stores import connections

    monkeypatch.setenv("REDIS_PASSWORD", "from-the-environment")
    monkeypatch.setattr(connections, "redis_url", lambda cfg: "redis://127.0.0.1:1/0")
    embedded = connections.get_redis(Configuration(redis_url=None))
    assert "password" not in embedded.connection_pool.connection_kwargs
    configured = connections.get_redis(Configuration(redis_url="redis://redis.internal:6379/0"))
    assert configured.connection_pool.connection_kwargs["password"] == "from-the-environment"
    assert configured is connections.get_redis(Configuration(redis_url="redis://redis.internal:6379/0"))
    assert configured is not connections.get_redis(
        Configuration(redis_url="redis://redis.internal:6379/0", redis_max_connections=3)
    )


# --- MongoDB ---------------------------------------------------------------------------------------

def test_mongo_credentials_tls_pool_and_timeouts_reach_pymongo(pem_files):
    cert, _, both = pem_files
    cfg = Configuration(
        mongodb_username="keel", mongodb_password="s3cret", mongodb_tls_ca_file=str(cert),
        mongodb_tls_cert_key_file=str(both), mongodb_max_pool_size=9, mongodb_socket_timeout_s=4.0,
    )
    client = make_mongo("mongodb://mongo-1:27017,mongo-2:27017/?replicaSet=rs0", cfg, 1.5, connect=False)
    try:
        options = client.options
        credentials = options.pool_options._credentials
        assert (credentials.username, credentials.password) == ("keel", "s3cret")
        assert options.pool_options.max_pool_size == 9
        assert options.pool_options.socket_timeout == 4.0
        assert options.pool_options.connect_timeout == 1.5
        assert options.server_selection_timeout == 1.5
        assert options.pool_options._ssl_context is not None  # TLS on, with the CA and client files loaded
        assert options.replica_set_name == "rs0"
    finally:
        client.close()


def test_without_credentials_drops_only_that_servers_secrets_and_tls():
    cfg = Configuration(redis_password="r", mongodb_password="m", redis_max_connections=5)
    plain = without_credentials(cfg, "redis")
    assert (plain.redis_password, plain.mongodb_password, plain.redis_max_connections) == (None, "m", 5)


# --- secrets in what is printed ----------------------------------------------------------------------

@pytest.mark.parametrize("url, shown", [
    ("redis://:hunter2@redis.internal:6379/0", "redis://:***@redis.internal:6379/0"),
    ("rediss://keel:hunter2@redis.internal:6380/0", "rediss://keel:***@redis.internal:6380/0"),
    ("mongodb://keel:hunter2@m1:27017,m2:27017/?replicaSet=rs0", "mongodb://keel:***@m1:27017,m2:27017/?replicaSet=rs0"),
    ("mongodb://m1:27017/?authSource=admin&password=hunter2", "mongodb://m1:27017/?authSource=admin&password=***"),
    ("http://tgi:80/?api_key=hunter2", "http://tgi:80/?api_key=***"),
    ("redis://redis.internal:6379/0", "redis://redis.internal:6379/0"),
])
def test_redact_hides_passwords_and_tokens_in_urls(url, shown):
    assert redact(url) == shown


def test_servers_status_and_its_errors_never_show_a_password():
    with refused_port() as port:
        cfg = Configuration(redis_url=f"redis://:hunter2@127.0.0.1:{port}/0",
                            mongodb_uri=f"mongodb://keel:hunter2@127.0.0.1:{port}/", connect_timeout_s=0.5)
        report = servers.status(cfg)
        with pytest.raises(servers.ServerUnavailableError) as raised:
            servers.redis_url(cfg)
    shown = " ".join(f"{row.url} {row.detail}" for row in report) + str(raised.value)
    assert "hunter2" not in shown
    assert "***" in shown


def test_secret_settings_stay_out_of_the_settings_repr(monkeypatch):
    monkeypatch.setenv("REDIS_PASSWORD", "hunter2")
    monkeypatch.setenv("KEEL_LLM_API_KEY", "tok-llm")
    cfg = Configuration(mongodb_password="hunter3", embedding_api_key="tok-tei")
    assert cfg.redis_password == "hunter2" and cfg.llm_api_key == "tok-llm"
    assert not {"hunter2", "hunter3", "tok-llm", "tok-tei"} & set(repr(cfg).replace("'", " ").split())
    for secret in ("hunter2", "hunter3", "tok-llm", "tok-tei"):
        assert secret not in repr(cfg)


# --- the model servers' API keys ----------------------------------------------------------------------

def test_the_chat_endpoint_gets_its_api_key_on_chat_and_completion_requests(monkeypatch):
    from keel.models import chat

    model = chat._endpoint_chat_model("http://vllm.internal:8000", 64, 0.0, 30.0, "tok-llm")
    assert model.llm.client.headers["Authorization"] == "Bearer tok-llm"
    assert chat._endpoint_headers(model) == {"Authorization": "Bearer tok-llm"}
    without = chat._endpoint_chat_model("http://vllm.internal:8000", 64, 0.0, 30.0, None)
    assert "Authorization" not in (without.llm.client.headers or {})

    seen = {}

    class Refused(Exception):
        pass

    def fake_stream(method, url, **kwargs):
        seen.update(kwargs)
        raise Refused

    monkeypatch.setattr("httpx.stream", fake_stream)
    with pytest.raises(Refused):
        list(chat._stream_completion("http://vllm.internal:8000", {"prompt": "x"}, 5.0, object,
                                     chat._endpoint_headers(model)))
    assert seen["headers"] == {"Authorization": "Bearer tok-llm"}


def test_the_embedding_endpoint_gets_its_api_key(monkeypatch):
    from keel.models import embeddings as module

    checked = {}

    def healthy(url, timeout, api_key=None):
        checked["api_key"] = api_key

    monkeypatch.setattr(module, "http_health", healthy)
    monkeypatch.setattr(module, "_embeddings", {})
    made = module.endpoint_embeddings("http://tei.internal:80", Configuration(embedding_api_key="tok-tei"))
    assert checked["api_key"] == "tok-tei"
    assert made.client.headers["Authorization"] == "Bearer tok-tei"
    assert made.async_client.headers["Authorization"] == "Bearer tok-tei"


# --- pools and timeouts from the environment -------------------------------------------------------

def test_pool_sizes_and_timeouts_come_from_the_environment_and_a_bad_one_names_its_variable(monkeypatch):
    from keel.core.configuration import ConfigurationError

    monkeypatch.setenv("KEEL_REDIS_MAX_CONNECTIONS", "12")
    monkeypatch.setenv("KEEL_REDIS_SOCKET_TIMEOUT_S", "2.5")
    monkeypatch.setenv("KEEL_MONGODB_MAX_POOL_SIZE", "40")
    monkeypatch.setenv("KEEL_CONNECT_TIMEOUT_S", "3")
    cfg = Configuration()
    assert (cfg.redis_max_connections, cfg.redis_socket_timeout_s, cfg.mongodb_max_pool_size) == (12, 2.5, 40)
    assert cfg.connect_timeout_s == 3.0 and isinstance(cfg.connect_timeout_s, float)
    assert Configuration(redis_max_connections=5).redis_max_connections == 5  # an explicit value wins
    monkeypatch.setenv("KEEL_REDIS_RETRIES", "two")
    with pytest.raises(ConfigurationError, match="KEEL_REDIS_RETRIES"):
        Configuration()
    monkeypatch.setenv("KEEL_REDIS_RETRIES", "-1")
    with pytest.raises(ConfigurationError, match=r"redis_retries must be at least 0.*KEEL_REDIS_RETRIES"):
        Configuration()


def test_the_server_never_sends_a_secret_with_a_run(monkeypatch):
    """A run's configurable strings end up in every checkpoint's metadata in MongoDB: the server's own
    values go with each run, its secrets do not (the run reads them from the environment)."""
    from langgraph.checkpoint.base import get_checkpoint_metadata

    from keel.server.settings_policy import deployment_settings

    monkeypatch.setenv("KEEL_LLM_API_KEY", "tok-from-env")
    cfg = Configuration(redis_password="hunter2", mongodb_password="hunter3", embedding_api_key="tok-tei",
                        redis_max_connections=7, redis_url="redis://redis.internal:6379/0")
    sent = deployment_settings(cfg)
    assert sent["redis_max_connections"] == 7 and sent["redis_url"] == "redis://redis.internal:6379/0"
    assert not {"redis_password", "mongodb_password", "embedding_api_key", "llm_api_key"} & set(sent)
    stored = get_checkpoint_metadata({"configurable": sent}, {})
    assert not {"hunter2", "hunter3", "tok-tei", "tok-from-env"} & {str(value) for value in stored.values()}


def test_an_unreachable_cluster_seed_is_a_redis_connection_error():
    """redis-py's cluster client raises RedisClusterException (no RedisError) when no seed answers;
    Keel's outage handling catches Redis errors, so it must be a ConnectionError."""
    import redis

    with refused_port() as port:
        with pytest.raises(redis.exceptions.ConnectionError, match="Redis Cluster unavailable"):
            make_redis(f"redis+cluster://127.0.0.1:{port}", Configuration(), 0.5)
