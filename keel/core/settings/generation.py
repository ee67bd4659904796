"""How the model is asked: the system prompt, how many tokens an answer may take, sampling, the
history kept in the prompt and end-of-sequence handling."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class GenerationSettings(CheckedSettings):
    """One model call: prompt, length, sampling, early end-of-sequence."""

    system_prompt: str | None = field(default=None, metadata={"doc": "The deployment's own system prompt."})
    max_new_tokens: int = field(
        default=256,
        metadata={"doc": "Tokens the model may write per call (the answer's length before any continuation); it must "
                  "leave room for the prompt in llm_context_window.", "scope": "request", "minimum": 1,
                  "maximum_setting": "max_request_new_tokens", "below_setting": "llm_context_window"},
    )
    temperature: float = field(
        default=0.2,
        metadata={"doc": "Sampling temperature of the first attempt: 0 always picks the likeliest token, higher "
                  "writes more freely.", "minimum": 0.0, "maximum": 2.0},
    )
    retry_temperature: float = field(
        default=0.0,
        metadata={"doc": "Sampling temperature of the stricter retry attempts.", "minimum": 0.0, "maximum": 2.0},
    )
    eos_prevention: bool = field(
        default=False,
        metadata={"doc": "Block end-of-sequence until eos_min_fraction of each call's tokens, so a small model cannot "
                  "stop early with half an answer. Off by "
                  "default, by measurement (docs/benchmarks.md 'Answer subgraph', bench/answer_quality.py, "
                  "10 paired SQuAD dev questions): on, completion tokens per attempt 155 -> 333, clean responses "
                  "1.0 -> 0.75, continuations 0.1 -> 0.5, no gain in correctness or success (equal); leaks 0 both."},
    )
    eos_min_fraction: float = field(
        default=0.95,
        metadata={"doc": "With eos_prevention on, end-of-sequence is allowed after this share of max_new_tokens.", **SHARE},
    )
    answer_token_reserve: int = field(
        default=0, metadata={"doc": "Tokens kept free for the answer; 0 means max_new_tokens.", **NON_NEGATIVE}
    )
    history_max_turns: int = field(
        default=6, metadata={"doc": "Earlier turns (question and answer) of the conversation put in the prompt, at most.",
                             **NON_NEGATIVE},
    )
    answer_stream_words: int = field(
        default=1,
        metadata={"doc": "Words per chunk when the checked answer is streamed to stream_mode=\"messages\" and "
                  "astream_events (chains/answer_relay.py).", "minimum": 1},
    )
    chars_per_token: int = field(
        default=4,
        metadata={"doc": "Characters per token when no tokenizer is at hand (len // 4 is about right for English text).",
                  **AT_LEAST_ONE},
    )

    @property
    def reserve_tokens(self) -> int:
        """Tokens the context budget leaves free for the answer."""
        return self.answer_token_reserve or self.max_new_tokens
