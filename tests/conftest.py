"""Shared fixtures: real embedded servers under one temporary KEEL_HOME for the whole test session.

Tests that need a server ask for its fixture; the server is started once (or reused when the
session's KEEL_HOME already has it running) and stopped at the end of the session.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests have three profiles (README, "Developing"), chosen with HYPOTHESIS_PROFILE (or
# pytest's --hypothesis-profile); scripts/test.sh picks ci when CI is set:
# ci       what CI runs: the same examples on every run of a commit (derandomized, no example
#          database, no timing-based checks), so a verdict never depends on luck or machine load;
# dev      the default: new random examples each run, failures remembered in .hypothesis/;
# explore  many more examples, for hunting edge cases; what it finds is fixed and pinned
#          with @example, never left to surface at random.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_UNTIMED)
settings.register_profile("dev", **_UNTIMED)
settings.register_profile("explore", max_examples=2000, **_UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
