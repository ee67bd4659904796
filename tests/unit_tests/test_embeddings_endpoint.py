"""The embeddings endpoint path (KEEL_EMBEDDING_ENDPOINT) when nothing answers there: an error naming the URL,
not a hang. The endpoint answering with the real all-MiniLM-L6-v2 is in integration_tests/test_embeddings_endpoint.py."""

from __future__ import annotations

import pytest

from keel.core.configuration import Configuration
from keel.runtime.servers import ServerUnavailableError
from tests.ports import refused_port


def test_an_unreachable_embedding_endpoint_is_an_error_naming_its_url():
    from keel.models.embeddings import get_embeddings

    with refused_port() as port:  # held by the test: nothing else can listen there meanwhile
        url = f"http://127.0.0.1:{port}/"
        with pytest.raises(ServerUnavailableError,
                           match=rf"embedding endpoint at http://127\.0\.0\.1:{port} .*KEEL_EMBEDDING_ENDPOINT"):
            get_embeddings(Configuration(embedding_endpoint=url, connect_timeout_s=2.0))
