"""What a question may carry besides its text: pictures (LangChain image content blocks), how many,
how large, and what is done with them for a model that reads text only."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class InputSettings(CheckedSettings):
    """Pictures attached to a question."""

    max_question_images: int = field(
        default=4, metadata={"doc": "Pictures one question may carry; more is refused, naming the limit.",
                             **NON_NEGATIVE}
    )
    max_question_image_bytes: int = field(
        default=5_000_000, metadata={"doc": "The largest picture a question may carry, in bytes (decoded).",
                                     **AT_LEAST_ONE}
    )
    chat_model_reads_images: bool = field(
        default=False,
        metadata={"doc": "The chat model's endpoint takes image parts (a multimodal model on vLLM or TGI): pictures "
                  "are sent to it as they are. Off (every pool model reads text only): their text is read "
                  "(OCR) and put in the question, and the answer says what could be read."},
    )
    max_image_text_chars: int = field(
        default=1500, metadata={"doc": "Characters of the text read from one picture that go into the question.",
                                **AT_LEAST_ONE}
    )
