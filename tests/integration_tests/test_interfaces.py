"""The ways users reach Keel on the real parts: the `keel` CLI (chat, servers, errors), the in-process
transformers runtime, and the token budget with the real tokenizer. LangGraph Studio's langgraph.json and
LangServe's playground page, which need no server, are in unit_tests/test_interfaces.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def keel(*args: str, env_extra: dict | None = None, stdin: str | None = None, timeout: int = 600):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "keel.cli.main", *args], cwd=ROOT, env=env, input=stdin,
        capture_output=True, text=True, timeout=timeout,
    )


@pytest.mark.real
def test_configured_server_that_is_down_gives_a_clear_error_naming_the_url(keel_home):
    from tests.ports import refused_port

    with refused_port() as port:  # an error, not a hang: the subprocess' own timeout tells a hang
        completed = keel("ask", "anything?", env_extra={"REDIS_URL": f"redis://127.0.0.1:{port}/0"}, timeout=120)
    assert completed.returncode == 1
    assert f"redis://127.0.0.1:{port}" in completed.stderr
    assert completed.stdout == ""


@pytest.mark.real
def test_keel_servers_status_and_reuse(keel_home, redis_url, mongodb_uri, llm_endpoint):
    completed = keel("servers", "status")
    assert completed.returncode == 0, completed.stderr
    lines = {line.split()[0]: line for line in completed.stdout.splitlines() if line.strip()}
    assert set(lines) >= {"redis", "mongo", "llm"}
    assert all("healthy" in line for line in lines.values())


@pytest.mark.real
def test_keel_ingest_json_then_chat_answers_from_the_document(keel_home, redis_url, mongodb_uri, llm_endpoint, tmp_path):
    from tests.pdf_factory import make_pdf

    user = f"cli-{uuid.uuid4().hex[:8]}"
    pdf = make_pdf(tmp_path / "clinic.pdf", ["Intro page.", "The Alder clinic opens at 7 am on weekdays."])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not really a pdf")
    ingested = keel("ingest", str(pdf), str(broken), "--user", user, "--json")
    summary = json.loads(ingested.stdout)
    assert summary["documents"] == 1 and summary["children"] >= 1
    assert [Path(e["source"]).name for e in summary["errors"]] == ["broken.pdf"]

    chat = keel("chat", "--user", user, stdin="When does the Alder clinic open?\n\n")
    assert chat.returncode == 0, chat.stderr[-2000:]
    assert "7 am" in chat.stdout
    assert "clinic.pdf, page 2" in chat.stdout


@pytest.mark.real
def test_token_budget_uses_the_chat_models_real_tokenizer(keel_config):
    from keel.graph import build_graph
    from keel.models.tokenizer import count_tokens, get_chat_tokenizer

    tokenizer = get_chat_tokenizer(keel_config)
    question = ("Explain the claims process. " * 200).strip()
    tokens = count_tokens(tokenizer, question)
    result = build_graph().invoke(
        {"messages": [("human", question)]}, {"configurable": {"max_input_tokens": tokens - 1}}
    )
    assert result["status"] == "exceeded_token_budget"
    assert f"{tokens} tokens" in result["answer"]


@pytest.mark.real
def test_in_process_transformers_runtime_loads_the_gguf_and_caches_the_dequantized_model(keel_config):
    from keel.core.configuration import Configuration
    from keel.models import chat

    cfg = Configuration(keel_home=keel_config.keel_home, chat_runtime="transformers", max_new_tokens=24)
    model = chat.get_chat_model(cfg)
    reply = model.invoke(
        [("human", "What is the capital of France? Answer in one word.")],
        **chat.generation_kwargs(model, 24, 0.0),
    )
    assert isinstance(reply.content, str) and reply.content.strip()
    cache = Path(keel_config.keel_home) / "models" / "SmolLM2-135M-Instruct.Q4_1" / "dequantized"
    assert (cache / "config.json").is_file()
    assert any(cache.glob("*.safetensors"))
    chat._transformers_chat_model.cache_clear()
    from transformers import AutoModelForCausalLM

    loads = []
    original = AutoModelForCausalLM.from_pretrained
    with pytest.MonkeyPatch.context() as patch:  # the second load reads the cache, never the GGUF again
        patch.setattr(AutoModelForCausalLM, "from_pretrained",
                      lambda *args, **kwargs: loads.append((args, kwargs)) or original(*args, **kwargs))
        chat.load_dequantized_model(str(chat.chat_gguf_path(cfg)), str(cache.parent))
    assert [Path(args[0]) for args, _ in loads] == [cache]
    assert all("gguf_file" not in kwargs for _, kwargs in loads)
