"""Fixtures for the real parts: embedded servers under one temporary KEEL_HOME for the whole test session.

Tests that need a server ask for its fixture; the server is started once (or reused when the
session's KEEL_HOME already has it running) and stopped at the end of the session. Every test in this
folder runs on the real parts, so each is marked ``real`` here rather than by hand:
``pytest -m "not real"`` then leaves exactly the fast set in unit_tests/.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tests.redis_cleanup import drop_index

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # A conftest hook sees every collected item, not only this folder's, hence the path check.
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.real)


SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(scope="session")
def keel_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("keel-home")
    previous = os.environ.get("KEEL_HOME")
    os.environ["KEEL_HOME"] = str(home)
    yield home
    from keel.runtime import servers

    servers.stop(_config(home))
    if previous is None:
        os.environ.pop("KEEL_HOME", None)
    else:
        os.environ["KEEL_HOME"] = previous


def _config(home: Path):
    from keel.core.configuration import Configuration

    return Configuration(keel_home=str(home), redis_url=None, mongodb_uri=None, llm_endpoint=None)


@pytest.fixture(scope="session")
def keel_config(keel_home):
    """A Configuration pointing at this session's embedded servers."""
    return _config(keel_home)


@pytest.fixture(scope="session")
def redis_url(keel_config) -> str:
    from keel.runtime import servers

    return servers.redis_url(keel_config)


@pytest.fixture(scope="session")
def redis_client(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def mongodb_uri(keel_config) -> str:
    from keel.runtime import servers

    return servers.mongodb_uri(keel_config)


@pytest.fixture(scope="session")
def llm_endpoint(keel_config) -> str:
    from keel.runtime import servers

    return servers.llm_endpoint(keel_config)


@pytest.fixture
def unique_user() -> str:
    """A fresh user id, so tests sharing one Redis never see each other's chunks."""
    return f"test-user-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data not found at {SHARED_DATA}; these tests read the shared real-world documents")
    return SHARED_DATA


class ChunkStores:
    """Makes RedisChunkStores, each on a fresh index of the test Redis, and drops every one with its keys
    when closed, so no test leaves an index behind and none sees another's chunks."""

    def __init__(self, redis_client):
        self.redis_client = redis_client
        self.index_names: list[str] = []

    def __call__(self, embeddings=None, **settings):
        from keel.core.configuration import Configuration
        from keel.models.embeddings import get_embeddings
        from keel.stores.chunk_store import RedisChunkStore

        settings.setdefault("index_name", f"test_store_{uuid.uuid4().hex[:8]}")
        cfg = Configuration(**settings)
        self.index_names.append(cfg.index_name)
        return RedisChunkStore(self.redis_client, embeddings or get_embeddings(cfg), cfg)

    def close(self) -> None:
        for name in self.index_names:
            drop_index(self.redis_client, name)


@pytest.fixture
def make_store(redis_client):
    """``make_store(embeddings=None, **settings)``: a store on a fresh index, dropped after the test."""
    stores = ChunkStores(redis_client)
    yield stores
    stores.close()


@pytest.fixture(scope="module")
def make_module_store(redis_client):
    """Like ``make_store``, for a store a whole module shares; dropped after the module."""
    stores = ChunkStores(redis_client)
    yield stores
    stores.close()
