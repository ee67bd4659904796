"""Keel reaching MongoDB over TLS with a client certificate, the way a production replica set or Atlas
is reached. The embedded Mongo-wire server speaks no TLS, so a TLS-terminating relay in front of it
(asking for a client certificate) stands in for mongod's own TLS: Keel's client, pymongo with the
settings' CA and certificate files, does the real handshake."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from urllib.parse import urlsplit

import pytest
from pymongo.errors import PyMongoError

from keel.core.configuration import Configuration
from keel.runtime import servers
from keel.runtime.client_options import make_mongo
from keel.stores.connections import get_mongo


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mongo-tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    both = folder / "cert-and-key.pem"
    both.write_text(cert.read_text() + key.read_text())
    return cert, key, both


@pytest.fixture(scope="module")
def tls_mongo(mongodb_uri, certificate):
    """A loopback port that speaks TLS, wants a client certificate signed by our CA, and relays the
    decrypted bytes to the session's embedded Mongo-wire server."""
    cert, key, _ = certificate
    target = urlsplit(mongodb_uri)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    context.load_verify_locations(str(cert))
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def pipe(source, sink):
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                continue
            try:
                secure = context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()  # a client without the right certificate
                continue
            upstream = socket.create_connection((target.hostname, target.port))
            threading.Thread(target=pipe, args=(secure, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, secure), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"mongodb://localhost:{listener.getsockname()[1]}/?directConnection=true"
    stop.set()
    thread.join()
    listener.close()


def test_keel_reaches_mongodb_over_tls_with_its_client_certificate(tls_mongo, certificate):
    cert, _, both = certificate
    cfg = Configuration(mongodb_uri=tls_mongo, mongodb_tls_ca_file=str(cert), mongodb_tls_cert_key_file=str(both),
                        connect_timeout_s=5.0)
    assert servers.mongodb_uri(cfg) == tls_mongo  # the health check's handshake, with the same files
    collection = get_mongo(cfg)[cfg.mongodb_database]["keel_tls_check"]
    collection.insert_one({"_id": "probe", "over": "tls"})
    try:
        assert collection.find_one({"_id": "probe"})["over"] == "tls"
    finally:
        collection.delete_one({"_id": "probe"})
    row = next(row for row in servers.status(cfg) if row.name == "mongo")
    assert row.healthy and not row.managed, row.detail


def test_without_the_ca_or_the_client_certificate_mongodb_over_tls_is_refused(tls_mongo, certificate):
    cert, _, both = certificate
    without_certificate = make_mongo(tls_mongo, Configuration(mongodb_tls_ca_file=str(cert)), 2.0)
    without_ca = make_mongo(tls_mongo, Configuration(mongodb_tls_cert_key_file=str(both)), 2.0)
    for client in (without_certificate, without_ca):
        with pytest.raises(PyMongoError):
            client.admin.command("ping")
        client.close()
