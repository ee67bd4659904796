"""Keel against a Redis set up as production runs it: TLS only (rediss://, the server asking for
Keel's client certificate), a password from the environment, RediSearch loaded; and a Redis that
hangs. The redis-server is the embedded Redis Stack's binary, started and stopped here."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import redis

from keel.core.configuration import Configuration
from keel.runtime import servers
from keel.stores.connections import get_redis
from tests.redis_processes import free_port, redis_modules_dir, redis_server


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """One self-signed certificate for 127.0.0.1: the CA, the server's and Keel's client certificate."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory, certificate):
    cert, key = certificate
    port = free_port()
    arguments = [
        "--port", "0", "--tls-port", str(port), "--tls-cert-file", str(cert), "--tls-key-file", str(key),
        "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "yes", "--requirepass", "hunter2",
        "--loadmodule", str(redis_modules_dir() / "redisearch.so"),
    ]  # fmt: skip
    with redis_server(tmp_path_factory.mktemp("tls-redis"), port, *arguments, ready=lambda: _up(port)):
        yield f"rediss://127.0.0.1:{port}/0"


def _up(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _tls(certificate, **settings) -> Configuration:
    cert, key = certificate
    return Configuration(redis_tls_ca_file=str(cert), redis_tls_cert_file=str(cert), redis_tls_key_file=str(key),
                         connect_timeout_s=3.0, **settings)


def test_keel_uses_a_tls_redis_with_a_client_certificate_and_a_password_from_the_environment(
    tls_redis, certificate, monkeypatch
):
    monkeypatch.setenv("REDIS_PASSWORD", "hunter2")
    cfg = _tls(certificate, redis_url=tls_redis)
    assert servers.redis_url(cfg) == tls_redis  # the health check signs in over TLS and finds RediSearch
    client = get_redis(cfg)
    assert client.set("keel:tls-check", "ok", ex=30) and client.get("keel:tls-check") == b"ok"
    row = next(row for row in servers.status(cfg) if row.name == "redis")
    assert row.healthy, row.detail


def test_a_missing_password_or_client_certificate_is_a_clear_unhealthy_status(tls_redis, certificate, monkeypatch):
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    no_password = next(row for row in servers.status(_tls(certificate, redis_url=tls_redis)) if row.name == "redis")
    assert not no_password.healthy and "Authentication" in no_password.detail, no_password.detail
    cert, _ = certificate
    no_client_cert = Configuration(redis_url=tls_redis, redis_password="hunter2", redis_tls_ca_file=str(cert),
                                   connect_timeout_s=3.0)
    row = next(row for row in servers.status(no_client_cert) if row.name == "redis")
    assert not row.healthy and row.detail, row


def test_a_password_written_into_the_url_is_never_shown(tls_redis, certificate):
    with_password = tls_redis.replace("rediss://", "rediss://:hunter2@")
    cfg = _tls(certificate, redis_url=with_password)
    row = next(row for row in servers.status(cfg) if row.name == "redis")
    assert row.healthy, row.detail
    assert "hunter2" not in row.url and ":***@" in row.url


def test_a_call_to_a_hung_redis_ends_within_the_configured_bound(tmp_path, keel_config):
    """A Redis that stops answering (SIGSTOP: the process is there, its socket accepts, nothing
    replies) costs a call one socket timeout, not an open-ended wait; and when it is back the same
    client answers again."""
    port = free_port()
    search = str(redis_modules_dir() / "redisearch.so")
    with redis_server(tmp_path / "hung", port, "--loadmodule", search) as process:
        cfg = Configuration(redis_url=f"redis://127.0.0.1:{port}/0", redis_socket_timeout_s=0.5, redis_retries=1,
                            redis_retry_backoff_s=0.1, connect_timeout_s=0.5)
        client = get_redis(cfg)
        assert client.ping()
        os.kill(process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(redis.exceptions.TimeoutError):
                client.get("anything")
            elapsed = time.monotonic() - started
        finally:
            os.kill(process.pid, signal.SIGCONT)
        assert 0.45 <= elapsed < 2.0, elapsed
        assert client.ping()
