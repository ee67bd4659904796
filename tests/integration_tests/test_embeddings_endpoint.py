"""The embeddings endpoint path (KEEL_EMBEDDING_ENDPOINT): langchain-huggingface's
HuggingFaceEndpointEmbeddings against a server speaking text-embeddings-inference's API, here a
small loopback server backed by the real local all-MiniLM-L6-v2, so the HTTP client path is real."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from keel.core.configuration import Configuration


def _tei_server(model):
    requests: list[dict] = []

    class TEIHandler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def _reply(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - http.server's naming
            self._reply(200, {"status": "ok"}) if self.path == "/health" else self._reply(404, {"error": "not found"})

        def do_POST(self):  # noqa: N802
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(payload)
            inputs = payload["inputs"]
            texts = [inputs] if isinstance(inputs, str) else list(inputs)
            vectors = model.encode(texts, normalize_embeddings=payload.get("normalize", True))
            self._reply(200, vectors.tolist())

    server = ThreadingHTTPServer(("127.0.0.1", 0), TEIHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests


@pytest.fixture(scope="module")
def local_model():
    from sentence_transformers import SentenceTransformer

    from keel.models.embeddings import embedding_model_path

    return SentenceTransformer(embedding_model_path(), device="cpu", local_files_only=True)


def test_a_configured_tei_endpoint_embeds_through_the_http_client(local_model):
    from keel.models.embeddings import get_embeddings

    server, requests = _tei_server(local_model)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        embeddings = get_embeddings(Configuration(embedding_endpoint=url))
        assert type(embeddings).__name__ == "HuggingFaceEndpointEmbeddings"
        texts = ["The clinic opens at 8 am on weekdays.", "Claims must be filed within 30 days."]
        remote = np.array(embeddings.embed_documents(texts))
        local = local_model.encode(texts, normalize_embeddings=True)
        assert remote.shape == local.shape == (2, 384)
        assert np.allclose(remote, local, atol=1e-5)
        query = np.array(embeddings.embed_query("When does the clinic open?"))
        assert float(query @ remote[0]) > float(query @ remote[1])  # the right sentence is closer
        assert requests, "the endpoint was never called: the local model answered instead"
    finally:
        server.shutdown()
