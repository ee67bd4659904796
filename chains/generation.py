"""One answer attempt: stream the model, parse, and continue while the answer is cut off.

    first call (max_new_tokens) → parse (five layers, keel/checks/parser.py) → complete? ─ yes → done
                                                                             └ no → indicator event →
    continuation prompt with the plan → stream a chunk (50% of max_new_tokens), checked every 30
    chunks → filter reasoning → validate (relevance, patterns, language, repetition, plan) → dedup
    → stitch → complete? ...

At most ``max_continuations`` continuations and ``max_total_tokens_factor`` x max_new_tokens in
all. A continuation that goes off-topic is stopped and dropped: the answer reverts to the last
valid text. If the limits stop an unfinished answer, it is trimmed to its last complete sentence.
Streamed text goes out through ``emit`` as events, filtered so no reasoning marker is ever shown:
keel.token (text), keel.continuation (the indicator, never part of the answer), and keel.revert
(``text`` = what to keep) whenever streamed text is not the answer after all: the parser dropped
part of the first piece, a continuation was rejected, or the answer was trimmed.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.answer_messages import continuation_messages, prefill_messages
from keel.chains.context import message_text
from keel.chains.prompts import CONTINUATION_INDICATOR
from keel.checks.completeness import assess_completeness, trim_to_complete
from keel.checks.continuation_checks import check_continuation, context_windows, stream_monitor
from keel.checks.dedup import deduplicate, stitch
from keel.checks.parser import parse_answer
from keel.checks.reasoning_filter import StreamFilter, strip_reasoning
from keel.checks.semantic import Semantic
from keel.checks.structure import extract_structure
from keel.core.configuration import Configuration
from keel.core.state import EMPTY_USAGE, Usage, add_usage, usage_from_metadata
from keel.models.cancellation import GenerationCancelled
from keel.models.chat import can_prefill, stream_chat, stream_prefilled

log = logging.getLogger("keel.answer")
NOSTREAM_TAG = "nostream"  # LangGraph's tag: raw tokens stay out of stream_mode="messages"


def private_model_config(config: RunnableConfig | None) -> RunnableConfig:
    """The config for a raw model call: its tokens (reasoning markers and all) must not reach a
    client live. LangGraph honours the ``nostream`` tag, but LangServe's /stream_log and
    /stream_events (and the playground on top of them) forward every callback; so the handlers
    that stream to a client are detached from this call, while tracing and the rest stay."""
    config = dict(config or {})
    config["tags"] = [*(config.get("tags") or []), NOSTREAM_TAG]
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if streams_to_client(handler):
                manager.remove_handler(handler)
        config["callbacks"] = manager
    elif isinstance(callbacks, list):
        config["callbacks"] = [h for h in callbacks if not streams_to_client(h)]
    return config  # type: ignore[return-value]


CLIENT_STREAM_METHODS = ("tap_output_iter", "tap_output_aiter")


def streams_to_client(handler: object) -> bool:
    """Whether a callback handler hands a run's output to a client as it is produced: the handlers
    behind astream_log (LangServe's /stream_log), astream_events (/stream_events) and LangGraph's
    messages mode. They are the ones with the public methods ``tap_output_iter`` and
    ``tap_output_aiter`` (through which a run's output is passed to them as it streams); tracers
    and a caller's own callbacks have neither. tests/unit_tests/test_server_stream.py fails if this
    stops finding those handlers."""
    return all(callable(getattr(handler, name, None)) for name in CLIENT_STREAM_METHODS)
MESSAGE_FRAMING_TOKENS = 4  # a chat template's per-message framing (ChatML: <|im_start|>role\n ... <|im_end|>\n)


@dataclass
class GenerationTools:
    """What the caller lends the loop: embeddings, a token counter, the event sink."""

    semantic: Semantic | None = None
    count_tokens: Callable[[str], int] | None = None
    emit: Callable[[dict], None] = lambda event: None
    eos_token_ids: Sequence[int] = ()
    ignore_answers: Sequence[str] = ()  # the prompt's few-shot answers
    tokenizer: object = None  # the chat model's tokenizer: its chat template allows true continuation
    timeout_s: float = 120.0


@dataclass
class Generation:
    """One attempt's answer as the model wrote it and what it cost: the text the checks judge."""
    text: str = ""  # the assembled answer: parsed, filtered, continued, deduplicated
    raw: str = ""  # everything the model wrote, for the logs
    parse_layer: str = "raw"
    parse_error: str | None = None
    continuations: int = 0
    usage: Usage = field(default_factory=lambda: dict(EMPTY_USAGE))  # type: ignore[arg-type]
    generation_seconds: float = 0.0  # time spent waiting for the model
    check_seconds: float = 0.0  # time spent in checks: parsing, filtering, embeddings, dedup
    stops: list[str] = field(default_factory=list)  # why continuation stopped or a piece was dropped
    complete: bool = True


@dataclass
class _Piece:
    raw: str = ""
    shown: str = ""  # what went out as keel.token events
    finish_reason: str | None = None
    usage: Usage | None = None
    stopped: str | None = None
    chunks: int = 0


def _tokens(text: str, tools: GenerationTools, cfg: Configuration) -> int:
    return tools.count_tokens(text) if tools.count_tokens else max(1, len(text) // max(1, cfg.chars_per_token))


def _message_tokens(messages: Sequence[AnyMessage], tools: GenerationTools, cfg: Configuration) -> int:
    return sum(_tokens(message_text(m), tools, cfg) + MESSAGE_FRAMING_TOKENS for m in messages)


def _stream_piece(
    model: BaseChatModel, messages: list[AnyMessage], max_tokens: int, temperature: float, cfg: Configuration,
    config: RunnableConfig | None, tools: GenerationTools, result: Generation,
    monitor: Callable[[str], str | None] | None = None, prefix: str | None = None,
) -> _Piece:
    """One streamed model call (continuing ``prefix`` when given); filtered text goes out as token
    events as it arrives."""
    piece, shown = _Piece(), StreamFilter()
    call_config = private_model_config(config)
    started = time.perf_counter()
    checks = 0.0
    eos = {"eos_prevention": cfg.eos_prevention, "eos_min_fraction": cfg.eos_min_fraction,
           "eos_token_ids": tools.eos_token_ids, "config": call_config}
    if prefix is None:
        stream = stream_chat(model, messages, max_tokens, temperature, **eos)
    else:
        stream = stream_prefilled(model, messages, prefix, max_tokens, temperature, tokenizer=tools.tokenizer,
                                  timeout=tools.timeout_s, **eos)
    # closed on every way out (a stop, a break, an error), so the model call ends here and then:
    # the request's generation slot waits for it (keel/models/cancellation.py)
    with closing(stream):
        for chunk in stream:
            text = chunk.content if isinstance(chunk.content, str) else str(chunk.content)
            piece.raw += text
            piece.chunks += 1
            piece.finish_reason = (chunk.response_metadata or {}).get("finish_reason") or piece.finish_reason
            piece.usage = usage_from_metadata(getattr(chunk, "usage_metadata", None)) or piece.usage
            tick = time.perf_counter()
            visible = shown.feed(text)
            if visible:
                piece.shown += visible
                tools.emit({"event": "keel.token", "text": visible})
            every = max(1, cfg.stream_check_every_chunks)
            if monitor and piece.chunks % every == 0 and len(piece.raw) >= cfg.stream_check_min_chars:
                piece.stopped = monitor(strip_reasoning(piece.raw))
            checks += time.perf_counter() - tick
            if piece.stopped:
                break
    tail = shown.flush()
    if tail and not piece.stopped:
        piece.shown += tail
        tools.emit({"event": "keel.token", "text": tail})
    result.generation_seconds += time.perf_counter() - started - checks
    result.check_seconds += checks
    if piece.usage is None:  # streaming servers often send no usage: count with the tokenizer
        completion = _tokens(piece.raw, tools, cfg) if piece.raw else 0
        prompt = _message_tokens(messages, tools, cfg)
        piece.usage = Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
    result.usage = add_usage(result.usage, piece.usage)
    return piece


def _closed(piece: _Piece, max_tokens: int) -> bool:
    """Did the model end the answer itself (its own EOS, or a closing answer tag)?"""
    if "</answer>" in piece.raw.lower():
        return True
    if piece.finish_reason is not None:
        return piece.finish_reason == "stop"
    return bool(piece.usage) and piece.usage["completion_tokens"] < max_tokens


def _continuation_text(raw: str, max_chars: int) -> str:
    """What a continuation adds: up to its closing answer tag, without markers or a lead-in."""
    raw = raw[:max_chars]
    lower = raw.lower()
    end = lower.find("</answer>")
    body = raw[:end] if end >= 0 else raw
    return parse_answer(body, max_chars).text if "<answer>" in body.lower() else strip_reasoning(body)


def generate_with_continuation(
    model: BaseChatModel,
    messages: list[AnyMessage],
    cfg: Configuration,
    temperature: float,
    config: RunnableConfig | None = None,
    *,
    question: str = "",
    contexts: Sequence[str] = (),
    tools: GenerationTools | None = None,
) -> Generation:
    """The model's answer to ``messages``, continued while it stops mid-answer (within the
    continuation limits), parsed, filtered and deduplicated on the way."""
    tools = tools or GenerationTools()
    result = Generation()
    first = _stream_piece(model, list(messages), cfg.max_new_tokens, temperature, cfg, config, tools, result)
    tick = time.perf_counter()
    parsed = parse_answer(first.raw, cfg.max_parse_chars, tools.ignore_answers)
    result.raw, result.text, result.parse_layer, result.parse_error = first.raw, parsed.text, parsed.layer, parsed.error
    closed = _closed(first, cfg.max_new_tokens)
    shown = _sync(tools, result, first.shown, "parsed")  # e.g. an echoed example or a lead-in was parsed away
    budget_total = int(cfg.max_new_tokens * cfg.max_total_tokens_factor)
    windows = context_windows(contexts, cfg.context_window_words)
    known_text = " ".join([question, *contexts])
    prefill = can_prefill(model, tools.tokenizer)
    result.check_seconds += time.perf_counter() - tick
    while True:
        tick = time.perf_counter()
        report = assess_completeness(result.text, closed)
        result.complete = report.complete
        stop = _limit_reached(result, cfg, budget_total)
        if report.complete or stop:
            if stop and not report.complete:
                result.stops.append(stop)
            result.check_seconds += time.perf_counter() - tick
            break
        structure = extract_structure(result.text)
        if prefill:
            conversation, prefix = prefill_messages(messages, result.text, structure, cfg), result.text.rstrip()
        else:
            conversation, prefix = continuation_messages(messages, result.text, structure, cfg), None
        spent = result.usage["completion_tokens"]
        step = min(int(cfg.max_new_tokens * cfg.continuation_fraction), budget_total - spent)
        room = cfg.llm_context_window - _message_tokens(conversation, tools, cfg) - _tokens(prefix or "", tools, cfg)
        step = min(step, room)
        monitor = stream_monitor(question, result.text, windows, known_text, tools.semantic, cfg)
        result.check_seconds += time.perf_counter() - tick
        if step < cfg.min_continuation_tokens:
            result.stops.append("context_window" if room < cfg.min_continuation_tokens else "token_budget")
            break
        result.continuations += 1
        tools.emit({"event": "keel.continuation", "text": CONTINUATION_INDICATOR, "number": result.continuations})
        log.debug("continuation %d (%s): answer so far %d chars, ends %r; reasons %s; next item %s, planned %s",
                  result.continuations, "prefilled" if prefill else "new turn", len(result.text), result.text[-60:],
                  report.reasons, structure.next_number, structure.planned)
        try:
            piece = _stream_piece(model, conversation, step, temperature, cfg, config, tools, result, monitor, prefix)
        except GenerationCancelled:  # the request is over: no other way of continuing either
            raise
        except Exception as error:  # noqa: BLE001 - a runtime without raw completion: continue by chat
            if not prefill:
                raise
            log.warning("true continuation failed (%s); continuing with a new chat turn instead", error)
            prefill, result.continuations = False, result.continuations - 1
            continue
        result.raw += piece.raw
        tick = time.perf_counter()
        accepted = _accept(piece, question, result, windows, known_text, structure, tools, cfg, prefill)
        result.check_seconds += time.perf_counter() - tick
        shown = _sync(tools, result, shown + piece.shown, "deduplicated" if accepted else result.stops[-1])
        if not accepted:
            break
        closed = _closed(piece, step)
    if not result.complete:
        trimmed = trim_to_complete(result.text)
        if trimmed != result.text.rstrip() and assess_completeness(trimmed, True).complete:
            result.text = trimmed
            result.stops.append("trimmed_to_last_sentence")
    _sync(tools, result, shown, "trimmed_to_last_sentence")
    return result


def _sync(tools: GenerationTools, result: Generation, shown: str, reason: str) -> str:
    """What the client's draft is now. Streamed tokens cannot be unsent: when the draft (all text
    streamed since the last revert) is not the answer (spacing aside), emit keel.revert with
    ``text``, the answer to keep, which the client shows instead."""
    if "".join(shown.split()) == "".join(result.text.split()):
        return shown
    tools.emit({"event": "keel.revert", "reason": reason, "text": result.text})
    return result.text


def _limit_reached(result: Generation, cfg: Configuration, budget_total: int) -> str | None:
    if result.continuations >= cfg.max_continuations:
        return "max_continuations"
    if result.usage["completion_tokens"] >= budget_total:
        return "token_budget"
    return None


def _accept(piece: _Piece, question: str, result: Generation, windows, known_text, structure,
            tools: GenerationTools, cfg: Configuration, prefilled: bool = False) -> bool:
    """Validate, deduplicate and append one continuation; False (answer unchanged) to stop."""
    if piece.stopped:
        result.stops.append(f"stream_check:{piece.stopped}")
        log.debug("continuation %d stopped while streaming (%s); reverting to the last valid answer",
                  result.continuations, piece.stopped)
        return False
    text = _continuation_text(piece.raw, cfg.max_parse_chars)
    if not text.strip():
        result.stops.append("empty_continuation")
        return False
    verdict = check_continuation(text, question, result.text, windows, known_text, structure, tools.semantic, cfg)
    if not verdict.ok:
        result.stops.append(f"rejected:{verdict.detail or verdict.reason}")
        log.debug("continuation %d rejected (%s); keeping the answer before it", result.continuations,
                  verdict.detail or verdict.reason)
        return False
    # A prefilled piece first finishes the cut sentence (its head); only whole sentences are deduplicated.
    head, rest = _split_head(text) if prefilled and not _ends_sentence(result.text) else ("", text)
    if tools.semantic is not None and rest.strip():
        deduped = deduplicate(rest, result.text + head, tools.semantic, cfg)
        rest = deduped.text
        if deduped.dropped:
            log.debug("continuation %d: %d duplicate sentence(s) dropped", result.continuations, len(deduped.dropped))
    text = (head + (" " if head and rest else "") + rest).strip() if head else rest
    if not text.strip():
        result.stops.append("nothing_new")
        return False
    result.text = _join_prefilled(result.text, text, piece.raw) if prefilled else stitch(result.text, text, cfg.stitch_restart_overlap)
    log.debug("continuation %d appended %d chars: starts %r ends %r", result.continuations, len(text),
              text[:40], text[-40:])
    return True


def _ends_sentence(text: str) -> bool:
    return bool(re.search(r"([.!?][\"')\]]*|\[Source \d+\])\s*$", text))


def _split_head(text: str) -> tuple[str, str]:
    """(the words that finish a cut sentence, the whole sentences after them)."""
    match = re.search(r"[.!?][\"')\]]*(?:\s*\[Source \d+\])?(\s+|$)", text)
    if not match:
        return text, ""
    return text[: match.start(1)], text[match.end(1):]


def _join_prefilled(answer: str, text: str, raw: str) -> str:
    """The model continued the answer's last token: glue exactly as it wrote (mid-word, newline, space)."""
    body = answer.rstrip()
    leading = raw[: len(raw) - len(raw.lstrip())]
    if text[:1] in ",.;:!?)'\"" or (not leading and body[-1:].isalnum()):
        glue = ""
    elif "\n" in leading:
        glue = "\n"
    else:
        glue = " "
    return body + glue + text
