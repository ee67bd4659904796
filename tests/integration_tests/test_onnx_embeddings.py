"""The embedding model on onnxruntime, exported from the packaged all-MiniLM-L6-v2 files, against
the torch path it replaces: the same vectors (fp32), close ones that rank alike (int8), inputs in
their order whatever their lengths, one export reused, and a process that embeds without torch."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from keel.core.settings.runtime import RuntimeSettings
from keel.models.embeddings import embedding_model_path, get_embeddings
from keel.models.onnx_embeddings import OnnxEmbeddings
from keel.models.onnx_export import ensure_exported, export_dir, source_fingerprint

TEXTS = [
    "Claims must be filed within 90 days of the date of service.",
    "",
    "ZR-200",
    "Der Roboter ZR-500 hebt bis zu 1.200 Kilogramm; der ZR-200 nur 25 kg.",
    "Refunds are paid within 14 days. " * 60,  # far over the model's 256 tokens: truncated alike
    "Émojis 🚀 and accents — café, naïve, Straße.",
]


@pytest.fixture(scope="module")
def runtimes():
    cfg = RuntimeSettings()
    return {name: get_embeddings(replace(cfg, embedding_runtime=name)) for name in ("torch", "onnx", "onnx_int8")}


def _cosines(a, b) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_default_runtime_is_int8_onnx_and_torch_stays_an_option(runtimes):
    assert RuntimeSettings().embedding_runtime == "onnx_int8"
    assert isinstance(runtimes["onnx_int8"], OnnxEmbeddings) and runtimes["onnx_int8"].onnx_file.name == "model-int8.onnx"
    assert isinstance(runtimes["onnx"], OnnxEmbeddings) and runtimes["onnx"].onnx_file.name == "model.onnx"
    assert type(runtimes["torch"]).__name__ == "HuggingFaceEmbeddings"


def test_fp32_onnx_gives_torchs_vectors_and_int8_close_ones(runtimes):
    torch_vectors = runtimes["torch"].embed_documents(TEXTS)
    assert _cosines(runtimes["onnx"].embed_documents(TEXTS), torch_vectors).min() > 0.9999
    int8 = runtimes["onnx_int8"].embed_documents(TEXTS)
    assert _cosines(int8, torch_vectors).min() > 0.95
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)  # normalized: cosine = dot product


def test_int8_ranks_passages_for_a_question_as_torch_does(runtimes):
    passages = ["The ZR-200 lifts up to 25 kg and costs 18,000 euros.",
                "The ZR-500 lifts up to 1,200 kilograms and costs 95,000 euros.",
                "Employees get 30 days of paid leave a year.",
                "Returns are accepted within 30 days with the receipt."]
    for question in ("How much can the ZR-500 lift?", "How many vacation days do I get?", "Can I return it?"):
        orders = []
        for name in ("torch", "onnx_int8"):
            vectors = np.asarray(runtimes[name].embed_documents(passages))
            orders.append(list(np.argsort(-(vectors @ np.asarray(runtimes[name].embed_query(question))))))
        assert orders[0][0] == orders[1][0], question


def test_a_batch_comes_back_in_the_order_given_whatever_the_lengths(runtimes):
    onnx = runtimes["onnx"]
    together = onnx.embed_documents(TEXTS)
    one_by_one = [onnx.embed_query(text) for text in TEXTS]
    assert _cosines(together, one_by_one).min() > 0.9999
    assert onnx.embed_documents([]) == []


def test_the_export_is_made_once_and_named_by_its_source(runtimes, tmp_path):
    model_dir = Path(embedding_model_path(RuntimeSettings()))
    made = runtimes["onnx_int8"].onnx_file
    before = made.stat().st_mtime_ns
    assert ensure_exported(model_dir, made.parents[2], quantized=True) == made  # found, not made again
    assert made.stat().st_mtime_ns == before
    # another model folder (here: the same files with another tokenizer config) gets its own export
    copy = tmp_path / model_dir.name
    copy.mkdir()
    for item in model_dir.iterdir():
        if item.is_file():
            (copy / item.name).symlink_to(item)
    (copy / "config.json").unlink()
    (copy / "config.json").write_text((model_dir / "config.json").read_text().replace("}", ', "keel_test": 1}', 1))
    assert source_fingerprint(copy) != source_fingerprint(model_dir)
    assert export_dir(copy, made.parents[2]) != made.parent


def test_a_process_embeds_on_onnx_without_importing_torch(runtimes):
    code = ("import sys; from keel.models.embeddings import get_embeddings; "
            "v = get_embeddings().embed_query('hello'); "
            "print(len(v), 'torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["384", "False", "False"]


def test_an_unknown_runtime_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("KEEL_EMBEDDING_RUNTIME", "openvino")
    with pytest.raises(ValueError, match="KEEL_EMBEDDING_RUNTIME"):
        RuntimeSettings()


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_beside_it(runtimes):
    for name in ("onnx", "onnx_int8"):
        embeddings = runtimes[name]
        alone = np.asarray(embeddings.embed_query(TEXTS[0]))
        for neighbours in (TEXTS, TEXTS[::-1], [TEXTS[0], "x" * 900]):
            in_batch = np.asarray(embeddings.embed_documents(neighbours))[neighbours.index(TEXTS[0])]
            assert np.abs(in_batch - alone).max() < 1e-5, (name, neighbours[:2])
