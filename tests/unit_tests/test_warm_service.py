"""The warm CLI service on a real Unix socket with a fake graph: `keel ask` prints what it prints
without the service, each question runs as its own user, the socket is its owner's, a bad request
is refused naming the problem, a changed environment is another service, and the command answers
by itself when no service can start."""

from __future__ import annotations

import json
import stat
import threading
from dataclasses import asdict, fields

import pytest

import keel.cli.main as cli
import keel.cli.running as running
from keel.cli import entry, warm_client, warm_protocol, warm_service
from keel.cli.ask import AskRequest
from keel.core.configuration import Configuration
from keel.models.cancellation import GenerationCancelled, is_cancelled
from keel.runtime.processes import ServerUnavailableError


class RecordingGraph:
    """Answers with the user it was asked for, and records every run configuration."""

    checkpointer = None

    def __init__(self):
        self.configs: list[dict] = []

    def invoke(self, graph_input, config):
        self.configs.append(config["configurable"])
        user = config["configurable"]["user_id"]
        return {"answer": f"Answer for {user}: café ☕", "status": "success", "route": "single_doc",
                "sources": [{"source": f"{user}.md", "page": 1}], "quality": 0.9, "attempts": 1,
                "sources_markdown": f"**Sources:**\n- [Source 1] {user}.md"}

    def stream(self, graph_input, config, stream_mode=None, subgraphs=False):
        """As Keel's graph streams a turn: the answer loop's events (from a subgraph), the subgraph's
        values (skipped by the chat), the outer state with its messages last."""
        assert stream_mode == ["custom", "values"] and subgraphs
        final = self.invoke(graph_input, config)
        words = final["answer"].split(" ")
        yield ("answer:1",), "custom", {"event": "keel.attempt", "attempt": 1, "strategy": "first"}
        for word in words:
            yield ("answer:1",), "custom", {"event": "keel.token", "text": word + " "}
        yield ("answer:1",), "values", {"draft": "the subgraph's own state"}
        yield (), "values", {**final, "messages": [object()]}  # messages are not JSON: never sent


@pytest.fixture
def service(tmp_path, monkeypatch):
    """A WarmService on a socket under tmp_path, serving RecordingGraph; yields (socket path, graph)."""
    graph = RecordingGraph()
    monkeypatch.setattr(running, "graph_with_history", lambda cfg: graph)
    path = tmp_path / "run" / "cli-test.sock"
    path.parent.mkdir()
    server = warm_service.WarmService(path, "test-key", Configuration())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield path, graph
    server.shutdown()
    server.server_close()


def _send(path, message: dict) -> dict:
    with warm_protocol.connect(path, timeout_s=10) as connection:
        return warm_client._exchange(connection, message)


def test_the_socket_is_its_owners_alone_and_answers_its_key(service):
    path, _ = service
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _send(path, {"op": "ping"})["key"] == "test-key"
    assert warm_client._ping(path, "test-key") is None
    assert "another service" in warm_client._ping(path, "other-key")


def test_keel_ask_prints_through_the_service_exactly_what_it_prints_without_it(service, monkeypatch, capsys):
    path, graph = service
    monkeypatch.setattr(warm_client, "ensure_running", lambda *args: None)
    monkeypatch.setattr(warm_client, "socket_path", lambda key: path)
    outputs = {}
    for mode in ("off", "auto"):
        monkeypatch.setenv("KEEL_CLI_SERVICE", mode)
        assert cli.main(["ask", "Who built it?", "--user", "ann", "--conversation", "c1", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        outputs[mode] = {key: value for key, value in out.items() if key != "seconds"}
        assert cli.main(["ask", "Who built it?", "--user", "ann", "--conversation", "c1"]) == 0
        outputs[mode + " text"] = capsys.readouterr().out
    assert outputs["auto"] == outputs["off"] and outputs["auto text"] == outputs["off text"]
    assert outputs["auto"]["answer"] == "Answer for ann: café ☕"
    assert len(graph.configs) == 4  # two questions each way, the service's as many as the command's own


def test_each_question_runs_as_its_own_user_and_conversation(service):
    path, graph = service
    for user, conversation in (("ann", "c-ann"), ("bob", "c-bob")):
        request = AskRequest("What is covered?", user, conversation, grounding_mode="open")
        reply = _send(path, {"op": "ask", "request": asdict(request)})
        assert reply["ok"] and reply["out"]["answer"].startswith(f"Answer for {user}")
        assert reply["out"]["conversation_id"] == conversation
    assert [(c["user_id"], c["thread_id"], c["grounding_mode"]) for c in graph.configs] == [
        ("ann", "ann/c-ann", "open"), ("bob", "bob/c-bob", "open")]  # each kept under its own user


@pytest.mark.parametrize(("request_fields", "problem"), [
    ({"question": "q", "user_id": "ann", "conversation": "c", "keel_home": "/etc"}, "unknown request fields"),
    ({"question": "  ", "user_id": "ann", "conversation": "c"}, "the question is empty"),
    ({"question": "why " * Configuration.max_question_chars, "user_id": "ann", "conversation": "c"}, "longer than"),
    ({"question": "q", "user_id": ["ann"], "conversation": "c"}, "are text"),
    ("not an object", "a JSON object"),
])
def test_a_bad_request_is_refused_naming_the_problem_and_runs_nothing(service, request_fields, problem):
    path, graph = service
    reply = _send(path, {"op": "ask", "request": request_fields})
    assert reply["ok"] is False and problem in reply["message"]
    assert graph.configs == []


def test_an_error_while_answering_is_raised_by_the_command_as_its_own(service, monkeypatch):
    path, graph = service

    def down(graph_input, config):
        raise ServerUnavailableError("embedded redis at redis://127.0.0.1:1 is not answering")

    monkeypatch.setattr(graph, "invoke", down)
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setattr(warm_client, "ensure_running", lambda *args: None)
    monkeypatch.setattr(warm_client, "socket_path", lambda key: path)
    with pytest.raises(ServerUnavailableError, match="redis://127.0.0.1:1"):
        warm_client.ask(AskRequest("q", "ann", "c"), Configuration())


def test_another_environment_or_home_is_another_service(monkeypatch, tmp_path):
    key = warm_protocol.service_key()
    assert warm_protocol.service_key() == key
    for variable, value in (("KEEL_EMBEDDING_RUNTIME", "torch"), ("REDIS_URL", "redis://elsewhere:6379/0"),
                            ("KEEL_SOMETHING_NEW", "1"), ("OMP_NUM_THREADS", "1")):
        with monkeypatch.context() as env:
            env.setenv(variable, value)
            assert warm_protocol.service_key() != key, variable
    monkeypatch.setenv("KEEL_HOME", str(tmp_path))
    assert warm_protocol.service_key() != key


def test_a_relative_home_names_one_service_wherever_it_is_started(monkeypatch, tmp_path):
    """The service runs in KEEL_HOME itself: it is handed the folder, not the relative name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KEEL_HOME", "relative-home")
    key = warm_protocol.service_key()
    spec = warm_client._spec(Configuration(), key, tmp_path / "s.sock")
    assert spec.env["KEEL_HOME"] == str(tmp_path / "relative-home")
    monkeypatch.setenv("KEEL_HOME", spec.env["KEEL_HOME"])
    monkeypatch.chdir(tmp_path.parent)
    assert warm_protocol.service_key() == key


def test_a_socket_another_os_user_listens_on_is_never_sent_a_question(service, monkeypatch):
    path, graph = service
    real_uid = warm_protocol.os.getuid()
    monkeypatch.setattr(warm_protocol.os, "getuid", lambda: real_uid + 1)  # as if the listener were another user
    with pytest.raises(PermissionError, match="another OS user"):
        warm_protocol.connect(path, timeout_s=5)
    monkeypatch.setattr(entry, "socket_path", lambda key: path)
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    assert entry.through_service(["ask", "q"]) is None and graph.configs == []


def test_every_variable_the_settings_read_is_part_of_the_key():
    """The entry point names the settings' variables without importing the settings: its list must
    be theirs, or a change to one of them would be answered by a service started without it."""
    variables = {f.metadata["env"] for f in fields(Configuration) if f.metadata.get("env")}
    assert {name for name in variables if not name.startswith("KEEL_")} == warm_protocol.OTHER_SETTING_VARIABLES


def test_the_key_is_the_same_before_and_after_the_command_sets_up_its_logs(monkeypatch):
    """The entry point computes the key before the command configures logging (which sets variables
    for the libraries' output); the command and the service compute it after."""
    from keel.cli.logs import configure_logging

    for variable in warm_protocol.OUTPUT_ONLY_VARIABLES:
        monkeypatch.setenv(variable, "")  # so that the test's end restores it
        monkeypatch.delenv(variable)  # configure_logging sets only unset ones
    before = warm_protocol.service_key()
    configure_logging(0)
    assert warm_protocol.service_key() == before
    configure_logging(2)
    assert warm_protocol.service_key() == before


def test_the_home_is_the_one_the_settings_name(monkeypatch, tmp_path):
    from keel.runtime.paths import keel_home

    for configured in (str(tmp_path / "home"), f" {tmp_path}/other ", None):
        with monkeypatch.context() as env:
            if configured is None:
                env.delenv("KEEL_HOME", raising=False)
            else:
                env.setenv("KEEL_HOME", configured)
            assert warm_protocol.home() == keel_home(Configuration())


def test_without_a_service_the_command_answers_by_itself(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setenv("KEEL_HOME", str(tmp_path))

    def cannot_start(*args):
        raise ServerUnavailableError("warm service exited during start-up")

    monkeypatch.setattr(warm_client, "ensure_running", cannot_start)
    graph = RecordingGraph()
    monkeypatch.setattr(running, "graph_with_history", lambda cfg: graph)
    assert cli.main(["ask", "Who built it?", "--user", "ann", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == "Answer for ann: café ☕"
    assert len(graph.configs) == 1


def test_a_home_too_deep_for_a_socket_is_answered_without_the_service(monkeypatch, tmp_path):
    deep = tmp_path / ("d" * 120)
    monkeypatch.setenv("KEEL_HOME", str(deep))
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setattr(warm_client, "ensure_running", lambda *args: pytest.fail("no service for such a home"))
    assert warm_client.ask(AskRequest("q", "ann", "c"), Configuration()) is None


# --- the entry point: a `keel ask` handed to the service before Keel is imported -------------------

@pytest.fixture
def entry_to(service, monkeypatch):
    """The entry point pointed at the test service, and the full command as it runs without one."""
    path, graph = service
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setattr(entry, "socket_path", lambda key: path)
    return path, graph


def _run(command, argv, capsys) -> tuple[int, str, str]:
    try:
        code = command(argv)
    except SystemExit as stop:  # argparse's own exit, in the full command
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _without_seconds(printed: str) -> str:
    try:
        out = json.loads(printed)
    except json.JSONDecodeError:
        return printed
    return json.dumps({key: value for key, value in out.items() if key != "seconds"})


@pytest.mark.parametrize("argv", [
    ["ask", "Who built it?", "--user", "ann", "--conversation", "c1", "--json"],
    ["ask", "Who built it?", "--user", "ann", "--conversation", "c1", "--answer-format", "sectioned"],
    ["ask", "   ", "--user", "ann"],  # a usage error: the usage and the reason, exit 2
    ["ask", "q", "--grounding", "loose"],  # not one of the choices
    ["ask", "q", "--user", "bad user!"],  # a setting refused: one line, exit 1
    ["ask"],  # the question missing
    ["ask", "--help"],  # the help on stdout, exit 0
])
def test_the_entry_point_prints_what_the_full_command_prints(entry_to, monkeypatch, capsys, argv):
    _, graph = entry_to
    full_command = cli.main
    monkeypatch.setattr(cli, "main", lambda argv=None: pytest.fail("the full command ran, not the service"))
    through_service = _run(entry.main, argv, capsys)
    questions_answered_by_service = len(graph.configs)
    monkeypatch.setenv("KEEL_CLI_SERVICE", "off")
    by_itself = _run(full_command, argv, capsys)
    code, out, err = through_service
    assert (code, _without_seconds(out), err) == (by_itself[0], _without_seconds(by_itself[1]), by_itself[2])
    assert questions_answered_by_service == (1 if code == 0 and "--help" not in argv else 0)


def test_the_entry_point_never_imports_keel_for_an_answer(entry_to, monkeypatch, capsys):
    monkeypatch.setattr(cli, "main", lambda argv=None: pytest.fail("the full command ran"))
    assert entry.main(["ask", "Who built it?", "--user", "ann", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer"] == "Answer for ann: café ☕"


def test_what_the_service_does_not_run_goes_to_the_full_command(entry_to, monkeypatch, tmp_path):
    _, graph = entry_to
    ran: list[list[str]] = []
    monkeypatch.setattr(cli, "main", lambda argv=None: ran.append(argv) or 0)
    for argv in (["ask", "q", "--docs", str(tmp_path / "a.pdf")], ["-v", "ask", "q"], ["ingest", str(tmp_path)]):
        assert entry.main(argv) == 0
    monkeypatch.setenv("KEEL_CLI_SERVICE", "off")
    assert entry.main(["ask", "q"]) == 0
    assert [argv[0] for argv in ran] == ["ask", "-v", "ingest", "ask"] and graph.configs == []


def test_with_no_service_running_the_full_command_runs_it(monkeypatch, tmp_path):
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setattr(entry, "socket_path", lambda key: tmp_path / "nobody-listens.sock")
    assert entry.through_service(["ask", "q"]) is None


def test_an_asker_who_leaves_stops_its_answer(entry_to, monkeypatch):
    path, graph = entry_to
    asked, stopped = threading.Event(), threading.Event()

    def slow_answer(graph_input, config):
        asked.set()
        for _ in range(200):
            if is_cancelled():
                stopped.set()
                raise GenerationCancelled("the request was cancelled")
            threading.Event().wait(0.05)
        raise AssertionError("the answer was not stopped")

    monkeypatch.setattr(graph, "invoke", slow_answer)
    connection = warm_protocol.connect(path, timeout_s=10)
    connection.sendall(json.dumps({"op": "command", "argv": ["ask", "Who built it?"]}).encode() + b"\n")
    assert asked.wait(5)
    connection.close()  # what Ctrl-C does to the command
    assert stopped.wait(5)


# --- keel chat: each turn streamed from the service -----------------------------------------------

@pytest.fixture
def chat_through(service, monkeypatch):
    """``ServiceChat`` pointed at the test service."""
    path, graph = service
    monkeypatch.setenv("KEEL_CLI_SERVICE", "auto")
    monkeypatch.setattr(warm_client, "ensure_running", lambda *args: None)
    monkeypatch.setattr(warm_client, "socket_path", lambda key: path)
    return warm_client.ServiceChat(Configuration()), graph


def test_a_chat_turn_streams_from_the_service_what_the_graph_streams(chat_through):
    chat, graph = chat_through
    config = {"configurable": {"thread_id": "c-ann", "user_id": "ann", "grounding_mode": "open",
                               "answer_format": "plain"}}
    question = {"messages": [("human", "What is covered?")]}
    remote = list(chat.stream(question, config, ["custom", "values"], subgraphs=True))
    local = [(mode, payload) for namespace, mode, payload in graph.stream(question, config, ["custom", "values"], True)
             if not (mode == "values" and namespace)]
    assert [mode for _, mode, _ in remote] == [mode for mode, _ in local]
    assert [payload for _, mode, payload in remote if mode == "custom"] == [p for m, p in local if m == "custom"]
    final = remote[-1][2]
    assert "messages" not in final and final == running.printed_state(local[-1][1])
    assert graph.configs[0]["user_id"] == "ann" and graph.configs[0]["thread_id"] == "c-ann"


def test_keel_chat_prints_through_the_service_what_it_prints_by_itself(service, monkeypatch, capsys):
    path, graph = service
    monkeypatch.setattr(warm_client, "ensure_running", lambda *args: None)
    monkeypatch.setattr(warm_client, "socket_path", lambda key: path)
    streamed_by_service = []
    service_stream = warm_client.ServiceChat.stream

    def counted(chat, *args, **kwargs):
        streamed_by_service.append(args[0])
        yield from service_stream(chat, *args, **kwargs)

    monkeypatch.setattr(warm_client.ServiceChat, "stream", counted)
    printed = {}
    for mode in ("off", "auto"):
        monkeypatch.setenv("KEEL_CLI_SERVICE", mode)
        monkeypatch.setattr("builtins.input", _until_eof(["Who built it?", "   ", "And when?"]))
        assert cli.main(["chat", "--user", "ann", "--conversation", "c1"]) == 0
        printed[mode] = capsys.readouterr()
    assert printed["auto"].out == printed["off"].out and printed["auto"].err == printed["off"].err
    assert printed["auto"].out.count("Answer for ann: café ☕") == 2
    assert len(graph.configs) == 4 and len(streamed_by_service) == 2  # two questions each way


def _until_eof(lines: list[str]):
    remaining = iter(lines)

    def ask(prompt: str) -> str:
        try:
            return next(remaining)
        except StopIteration:
            raise EOFError from None

    return ask


def test_a_chat_turn_the_service_cannot_answer_is_the_commands_own_error(chat_through, monkeypatch):
    chat, graph = chat_through

    def down(graph_input, config):
        raise ServerUnavailableError("embedded redis at redis://127.0.0.1:1 is not answering")

    monkeypatch.setattr(graph, "invoke", down)
    config = {"configurable": {"thread_id": "c", "user_id": "ann"}}
    with pytest.raises(ServerUnavailableError, match="redis://127.0.0.1:1"):
        list(chat.stream({"messages": [("human", "q")]}, config))


def test_a_turn_after_the_service_went_away_is_answered_here(chat_through, monkeypatch, tmp_path):
    chat, graph = chat_through
    monkeypatch.setattr(warm_client, "socket_path", lambda key: tmp_path / "gone.sock")  # it exited, idle
    config = {"configurable": {"thread_id": "c", "user_id": "ann"}}
    modes = [mode for _, mode, _ in chat.stream({"messages": [("human", "q")]}, config, ["custom", "values"], True)]
    assert modes[-1] == "values" and "custom" in modes and len(graph.configs) == 1
    assert warm_client.ask(AskRequest("q", "ann", "c"), Configuration()) is None  # keel ask: answers itself


def test_the_warm_up_graph_answers_the_default_options_and_the_parser_is_built_once(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(running, "graph_with_history", lambda cfg: built.append(cfg) or object())
    path = tmp_path / "run" / "cli-once.sock"
    path.parent.mkdir()
    server = warm_service.WarmService(path, "test-key", Configuration())
    try:
        warmed = object()
        server.keep_graph(warm_service.DEFAULT_OPTIONS, warmed)
        assert server.graph_for(AskRequest("q", "alice", "c1")) is warmed and built == []
        server.graph_for(AskRequest("q", "alice", "c1", grounding_mode="strict"))
        assert len(built) == 1  # other options: a graph of their own
    finally:
        server.server_close()
    assert warm_service._parser() is warm_service._parser()
