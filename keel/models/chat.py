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

from keel.core.settings import ChatModelSettings, RuntimeSettings
from keel.core.text import content_text
from keel.models.cancellation import guard_stream
from keel.models.tokenizer import chat_gguf_path, get_chat_tokenizer, model_cache_dir
from keel.runtime.client_options import bearer_headers
from keel.runtime.servers import configured_llm_api_key, configured_llm_endpoint, llm_endpoint

# transformers and langchain_huggingface are imported inside the functions that use them: they take
# seconds to import (torch), and a process that never makes this model should not pay for them.

log = logging.getLogger(__name__)
_lock = threading.Lock()


def resolve_runtime(cfg: RuntimeSettings) -> str:
    """Where the chat model runs: the configured runtime, or for "auto" an endpoint when one is
    configured or llama.cpp is installed, else transformers in process."""
    if cfg.chat_runtime != "auto":
        return cfg.chat_runtime
    if configured_llm_endpoint(cfg) or importlib.util.find_spec("llama_cpp") is not None:
        return "endpoint"
    return "transformers"


def get_chat_model(cfg: ChatModelSettings) -> BaseChatModel:
    """The configured chat model, created once per process and settings."""
    runtime = resolve_runtime(cfg)
    if runtime == "endpoint":
        return _endpoint_chat_model(
            llm_endpoint(cfg), cfg.max_new_tokens, cfg.temperature, cfg.request_timeout_s, configured_llm_api_key(cfg)
        )
    if runtime == "transformers":
        gguf = chat_gguf_path(cfg)
        return _transformers_chat_model(str(gguf), str(model_cache_dir(cfg, gguf)), cfg.max_new_tokens)
    raise ValueError(f"unknown chat_runtime {runtime!r}: use 'endpoint', 'transformers' or 'auto'")


@lru_cache(maxsize=8)
def _endpoint_chat_model(
    url: str, max_new_tokens: int, temperature: float, timeout: float, api_key: str | None = None
) -> BaseChatModel:
    from langchain_huggingface import ChatHuggingFace, HuggingFaceEndpoint

    # langchain-huggingface sends its token only to Hugging Face's own hosts; a deployment's server
    # (vLLM --api-key, a gateway in front of TGI) gets the key as a header of every request instead.
    llm = HuggingFaceEndpoint(
        endpoint_url=url,
        max_new_tokens=max_new_tokens,
        temperature=temperature or None,
        timeout=int(timeout),
        server_kwargs={"headers": bearer_headers(api_key)} if api_key else {},
    )
    # stream_usage: TGI and vLLM count a stream's tokens only when asked (stream_options.include_usage);
    # a server that sends no counts (llama-cpp-python's) is counted with the tokenizer (chains/generation.py)
    return ChatHuggingFace(llm=llm, max_tokens=max_new_tokens, temperature=temperature, stream_usage=True)


@lru_cache(maxsize=2)
def _transformers_chat_model(gguf: str, cache_dir: str, max_new_tokens: int) -> BaseChatModel:
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import pipeline

    model = load_dequantized_model(gguf, cache_dir)
    tokenizer = get_chat_tokenizer(RuntimeSettings(chat_model_gguf=gguf))
    generator = pipeline(
        "text-generation",
        model=model,
        tokenizer=tokenizer,
        max_new_tokens=max_new_tokens,
        return_full_text=False,
    )
    llm = HuggingFacePipeline(pipeline=generator, model_id=gguf)
    return ChatHuggingFace(llm=llm, tokenizer=tokenizer, model_id=gguf)


# The sampling seed sent with every request to a chat endpoint. Without one, llama-cpp-python's
# server seeds each request from the previous request's seed, so the same prompt is sampled
# differently depending on how many requests the server has served before (other users, the order
# of a test run): an answer, and a test's verdict, were a matter of chance. With a fixed seed the
# answer is a function of the prompt and the settings. Retries still differ: their prompts and
# temperatures change. TGI and vLLM take the same field.
GENERATION_SEED = 1234


def generation_kwargs(model: BaseChatModel, max_tokens: int, temperature: float) -> dict:
    """Per-call length and temperature, in the form the model's runtime understands."""
    llm = getattr(model, "llm", None)
    if llm is not None and type(llm).__name__ == "HuggingFacePipeline":
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        return {"pipeline_kwargs": {"max_new_tokens": max_tokens, **sampling}}
    if _endpoint_url(model) is not None:
        return {"max_tokens": max_tokens, "temperature": temperature, "seed": GENERATION_SEED}
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


# --- early-EOS prevention: a small model must not stop with half an answer ------------------------

class EarlyEOSBlocker:
    """A transformers logits processor that keeps the model from ending its answer too early.

    A small model can stop early with half an answer (see eos_prevention). Two stages:
    stage 1 blocks every end-of-sequence token until ``min_fraction`` (95%) of ``max_new_tokens``
    are generated; stage 2 keeps blocking while more than (1 - min_fraction) (5%) of the budget
    remains. The generate call also gets ``min_new_tokens``, transformers' own guard, so either
    alone is enough.
    """

    def __init__(self, eos_token_ids, max_new_tokens: int, min_fraction: float = 0.95):
        self.eos_token_ids = sorted({int(t) for t in eos_token_ids if t is not None})
        self.max_new_tokens = int(max_new_tokens)
        self.min_new_tokens = min_new_tokens(max_new_tokens, min_fraction)
        self.min_fraction = min_fraction
        self._prompt_length: int | None = None

    def __call__(self, input_ids, scores):
        if self._prompt_length is None:  # the first call sees the prompt only
            self._prompt_length = int(input_ids.shape[-1])
        generated = int(input_ids.shape[-1]) - self._prompt_length
        remaining = self.max_new_tokens - generated
        stage_one = generated < self.min_new_tokens
        stage_two = remaining > self.max_new_tokens * (1.0 - self.min_fraction)
        if (stage_one or stage_two) and self.eos_token_ids:
            scores[:, self.eos_token_ids] = float("-inf")
        return scores


def min_new_tokens(max_new_tokens: int, fraction: float) -> int:
    """The fewest tokens a generation must write: ``fraction`` of its limit."""
    import math

    return max(0, min(int(max_new_tokens), math.ceil(max_new_tokens * fraction)))


def _is_pipeline(model: BaseChatModel) -> bool:
    llm = getattr(model, "llm", None)
    return llm is not None and type(llm).__name__ == "HuggingFacePipeline"


def pipeline_eos_ids(model: BaseChatModel) -> list[int]:
    """The token ids that end a transformers pipeline's generation."""
    pipe = model.llm.pipeline  # type: ignore[attr-defined]
    ids = getattr(pipe.model.generation_config, "eos_token_id", None)
    ids = list(ids) if isinstance(ids, (list, tuple)) else [ids]
    return [i for i in {*ids, getattr(pipe.tokenizer, "eos_token_id", None)} if i is not None]


# Endpoint-side ways to delay EOS, best first. min_tokens: the server blocks EOS until N tokens
# (llama.cpp's server, vLLM). logit_bias: EOS blocked for the whole call (the call then runs to
# max_tokens, which is >= 95%). A server that rejects one is remembered and gets the next.
ENDPOINT_EOS_STAGES = ("min_tokens", "logit_bias", "none")
REJECTED_REQUEST_STATUS = (400, 404, 405, 415, 422, 501)
# OpenAI's logit_bias range is [-100, 100]; -100 is the protocol's "never sample this token", not a tunable.
LOGIT_BIAS_BAN = -100.0
_endpoint_stage: dict[str, int] = {}


def _endpoint_url(model: BaseChatModel) -> str | None:
    llm = getattr(model, "llm", None)
    return getattr(llm, "endpoint_url", None) if llm is not None and not _is_pipeline(model) else None


def _endpoint_headers(model: BaseChatModel) -> dict | None:
    """The headers the endpoint chat model sends (its API key), for Keel's own completion requests."""
    server_kwargs = getattr(getattr(model, "llm", None), "server_kwargs", None) or {}
    return server_kwargs.get("headers")


def _endpoint_eos_params(stage: str, max_tokens: int, fraction: float, eos_token_ids) -> dict | None:
    if stage == "min_tokens":
        return {"min_tokens": min_new_tokens(max_tokens, fraction)}
    if stage == "logit_bias" and eos_token_ids:
        return {"logit_bias": {str(int(t)): LOGIT_BIAS_BAN for t in eos_token_ids}}
    return None


def _with_endpoint_eos(key: str, max_tokens: int, fraction: float, eos_token_ids, call):
    """Stream ``call(extra_params)`` with the best EOS stage this endpoint accepts (see above)."""
    while True:
        index = _endpoint_stage.get(key, 0)
        stage = ENDPOINT_EOS_STAGES[index]
        params = _endpoint_eos_params(stage, max_tokens, fraction, eos_token_ids)
        if params is None and stage != "none":
            _endpoint_stage[key] = index + 1
            continue
        if params is None:
            yield from call({})
            return
        started = False
        try:
            for chunk in call(params):
                started = True
                yield chunk
            return
        except Exception as error:  # noqa: BLE001 - degrade only on a rejected request, before any chunk
            status = getattr(getattr(error, "response", None), "status_code", None)
            if started or status not in REJECTED_REQUEST_STATUS:
                raise
            log.warning("the chat endpoint rejected %s (%s); early-EOS prevention falls back", stage, error)
            _endpoint_stage[key] = index + 1


def _pipeline_eos_kwargs(model: BaseChatModel, kwargs: dict, max_tokens: int, fraction: float) -> dict:
    from transformers import LogitsProcessorList

    blocker = EarlyEOSBlocker(pipeline_eos_ids(model), max_tokens, fraction)
    kwargs["pipeline_kwargs"].update(logits_processor=LogitsProcessorList([blocker]), min_new_tokens=blocker.min_new_tokens)
    return kwargs


def stream_chat(model: BaseChatModel, messages, max_tokens: int, temperature: float, **options):
    """Stream one chat call (message chunks), with early-EOS prevention when asked.

    In-process: the EarlyEOSBlocker logits processor plus min_new_tokens. Endpoint: min_tokens,
    then logit_bias, then nothing, whichever the server accepts. Other models get no extra arguments.
    The stream stops (closed, ``GenerationCancelled``) as soon as the request it serves is over.
    """
    return guard_stream(_stream_chat(model, messages, max_tokens, temperature, **options))


def _stream_chat(
    model: BaseChatModel,
    messages,
    max_tokens: int,
    temperature: float,
    *,
    eos_prevention: bool = False,
    eos_min_fraction: float = 0.95,
    eos_token_ids=(),
    config=None,
):
    kwargs = generation_kwargs(model, max_tokens, temperature)
    if eos_prevention and max_tokens > 1 and _is_pipeline(model):
        kwargs = _pipeline_eos_kwargs(model, kwargs, max_tokens, eos_min_fraction)
    url = _endpoint_url(model)
    if not eos_prevention or max_tokens <= 1 or url is None:
        yield from model.stream(messages, config=config, **kwargs)
        return
    yield from _with_endpoint_eos(
        url, max_tokens, eos_min_fraction, eos_token_ids,
        lambda params: model.stream(messages, config=config, **kwargs, **({"extra_body": params} if params else {})),
    )


# --- true continuation: a cut-off answer goes on from its last token, the assistant's own partial
# answer as the prompt's end, instead of a new reply that restarts or repeats it -------------------

def can_prefill(model: BaseChatModel, tokenizer=None) -> bool:
    """Can this model continue a partial assistant answer token by token? The in-process pipeline
    can; an endpoint can when the chat template is known (OpenAI-style /v1/completions)."""
    if _is_pipeline(model):
        return True
    return _endpoint_url(model) is not None and bool(getattr(tokenizer, "chat_template", None))


def render_prompt(tokenizer, messages, prefix: str) -> str:
    """The chat template applied to ``messages``, opened for the assistant, plus its partial answer."""
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    turns = [{"role": roles.get(m.type, "user"), "content": content_text(m.content)} for m in messages]
    return tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False) + prefix


class CompletionRejected(RuntimeError):
    """The server refused a completion request (its HTTP status and message)."""
    def __init__(self, status_code: int, text: str):
        super().__init__(f"HTTP {status_code}: {text}")
        self.response = type("Response", (), {"status_code": status_code})()


def stream_prefilled(model: BaseChatModel, messages, prefix: str, max_tokens: int, temperature: float, **options):
    """Stream the continuation of ``prefix`` (message chunks with finish_reason where known); like
    ``stream_chat`` it stops as soon as the request it serves is over."""
    return guard_stream(_stream_prefilled(model, messages, prefix, max_tokens, temperature, **options))


def _stream_prefilled(
    model: BaseChatModel,
    messages,
    prefix: str,
    max_tokens: int,
    temperature: float,
    *,
    tokenizer=None,
    eos_prevention: bool = False,
    eos_min_fraction: float = 0.95,
    eos_token_ids=(),
    timeout: float = 120.0,
    config=None,
):
    from langchain_core.messages import AIMessageChunk

    if _is_pipeline(model):
        pipe_tokenizer = model.llm.pipeline.tokenizer  # type: ignore[attr-defined]
        kwargs = generation_kwargs(model, max_tokens, temperature)
        if eos_prevention and max_tokens > 1:
            kwargs = _pipeline_eos_kwargs(model, kwargs, max_tokens, eos_min_fraction)
        prompt = render_prompt(pipe_tokenizer, messages, prefix)
        for text in model.llm.stream(prompt, config=config, **kwargs):  # type: ignore[attr-defined]
            yield AIMessageChunk(content=text)
        return
    url = _endpoint_url(model)
    body = {"prompt": render_prompt(tokenizer, messages, prefix), "max_tokens": max_tokens,
            "temperature": temperature, "seed": GENERATION_SEED, "stream": True,
            "stream_options": {"include_usage": True}}
    if getattr(tokenizer, "eos_token", None):
        body["stop"] = [tokenizer.eos_token]

    headers = _endpoint_headers(model)

    def call(params: dict):
        return _stream_completion(str(url), {**body, **params}, timeout, AIMessageChunk, headers)

    if not eos_prevention or max_tokens <= 1:
        yield from call({})
        return
    yield from _with_endpoint_eos(str(url), max_tokens, eos_min_fraction, eos_token_ids, call)


def _stream_completion(url: str, body: dict, timeout: float, chunk_class, headers: dict | None = None):
    import json

    import httpx

    with httpx.stream(
        "POST", url.rstrip("/") + "/v1/completions", json=body, timeout=timeout, headers=headers
    ) as response:
        if response.status_code >= 400:
            response.read()
            raise CompletionRejected(response.status_code, response.text[:300])
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            event = json.loads(data)
            choice = (event.get("choices") or [{}])[0]
            reason = choice.get("finish_reason")
            yield chunk_class(content=choice.get("text") or "", usage_metadata=_usage_metadata(event.get("usage")),
                              response_metadata={"finish_reason": reason} if reason else {})


def _usage_metadata(usage: dict | None) -> dict | None:
    """A completion event's token counts (TGI and vLLM send them last when asked) as LangChain's."""
    if not usage:
        return None
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}
