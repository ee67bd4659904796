"""Chat model factory: ChatHuggingFace over an endpoint (default) or in-process transformers.

The endpoint path speaks the chat-completion API that TGI, vLLM and llama.cpp's server share, so
the embedded default (SmolLM2 on llama.cpp) runs the same client code as production. The
in-process runtime loads the same GGUF with transformers and keeps a de-quantized copy so later
loads are fast; it is used when llama-cpp-python is absent or ``chat_runtime="transformers"``.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from functools import lru_cache

from langchain_core.language_models import BaseChatModel

from graph.configuration import Configuration
from models.tokenizer import chat_gguf_path, get_chat_tokenizer, model_cache_dir

log = logging.getLogger(__name__)
_lock = threading.Lock()


def resolve_runtime(cfg: Configuration) -> str:
    if cfg.chat_runtime != "auto":
        return cfg.chat_runtime
    if cfg.llm_endpoint or importlib.util.find_spec("llama_cpp") is not None:
        return "endpoint"
    return "transformers"


def get_chat_model(cfg: Configuration) -> BaseChatModel:
    """The configured chat model, created once per process and settings."""
    runtime = resolve_runtime(cfg)
    if runtime == "endpoint":
        from stores.servers import llm_endpoint

        return _endpoint_chat_model(llm_endpoint(cfg), cfg.max_new_tokens, cfg.temperature, cfg.request_timeout_s)
    if runtime == "transformers":
        gguf = chat_gguf_path(cfg)
        return _transformers_chat_model(str(gguf), str(model_cache_dir(cfg, gguf)), cfg.max_new_tokens)
    raise ValueError(f"unknown chat_runtime {runtime!r}: use 'endpoint', 'transformers' or 'auto'")


@lru_cache(maxsize=8)
def _endpoint_chat_model(url: str, max_new_tokens: int, temperature: float, timeout: float) -> BaseChatModel:
    from langchain_huggingface import ChatHuggingFace, HuggingFaceEndpoint

    llm = HuggingFaceEndpoint(
        endpoint_url=url,
        max_new_tokens=max_new_tokens,
        temperature=temperature or None,
        timeout=int(timeout),
    )
    return ChatHuggingFace(llm=llm, max_tokens=max_new_tokens, temperature=temperature)


@lru_cache(maxsize=2)
def _transformers_chat_model(gguf: str, cache_dir: str, max_new_tokens: int) -> BaseChatModel:
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import pipeline

    model = load_dequantized_model(gguf, cache_dir)
    tokenizer = get_chat_tokenizer(Configuration(chat_model_gguf=gguf))
    generator = pipeline(
        "text-generation",
        model=model,
        tokenizer=tokenizer,
        max_new_tokens=max_new_tokens,
        return_full_text=False,
    )
    llm = HuggingFacePipeline(pipeline=generator, model_id=gguf)
    return ChatHuggingFace(llm=llm, tokenizer=tokenizer, model_id=gguf)


def generation_kwargs(model: BaseChatModel, max_tokens: int, temperature: float) -> dict:
    """Per-call length and temperature, in the form the model's runtime understands."""
    llm = getattr(model, "llm", None)
    if llm is not None and type(llm).__name__ == "HuggingFacePipeline":
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        return {"pipeline_kwargs": {"max_new_tokens": max_tokens, **sampling}}
    return {"max_tokens": max_tokens, "temperature": temperature}


def load_dequantized_model(gguf: str, cache_dir: str):
    """Load the GGUF in transformers, de-quantizing once into a safetensors cache."""
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    cache = Path(cache_dir) / "dequantized"
    with _lock:
        if (cache / "config.json").is_file():
            return AutoModelForCausalLM.from_pretrained(cache, local_files_only=True)
        path = Path(gguf)
        log.info("de-quantizing %s for the in-process runtime (once; cached in %s)", path.name, cache)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        # The GGUF weights are de-quantized on load; drop the GGUF marker so transformers saves
        # them as plain safetensors (it refuses to serialise a "quantized" model otherwise).
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        cache.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(cache)
        return model
