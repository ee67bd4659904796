"""Pictures a question carries (LangChain image content blocks), checked, and made fit for the model.

A multimodal endpoint (``chat_model_reads_images``) gets them as OpenAI-style image parts, the form
TGI, vLLM and llama.cpp's server take. A model that reads text only (every pool model) gets their
text instead: each picture is read (OCR, or the application's own ``image_reader``) and the text
goes into the question, so "what does this error mean?" with a screenshot is asked with the error's
words; the answer then says what was read, or that nothing could be.

Only inline pictures are taken (base64, or a ``data:`` URL): Keel never fetches a URL a caller
names. A block that is not a readable picture, too many pictures or too large a one is an
``ImageInputError`` (a ``ValueError``) that names the problem.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from keel.core.settings.inputs import InputSettings
from keel.loaders.image import inspect_image

log = logging.getLogger("keel.answer")
IMAGE_BLOCK_TYPES = ("image", "image_url", "input_image")
_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(;[\w-]+=[^;,]*)*;base64,(?P<data>.*)$", re.DOTALL)


class ImageInputError(ValueError):
    """A picture of the question cannot be taken; the message says which and why."""


@dataclass(frozen=True)
class QuestionImage:
    """A picture the user sent with the question, as bytes with its media type."""
    data: bytes
    mime_type: str

    def part(self) -> dict:
        """The picture as an OpenAI-style image part (what TGI, vLLM and llama.cpp's server take)."""
        encoded = base64.b64encode(self.data).decode()
        return {"type": "image_url", "image_url": {"url": f"data:{self.mime_type};base64,{encoded}"}}


def image_blocks(content: Any) -> list[dict]:
    """The image content blocks of a message's content (none for plain text)."""
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") in IMAGE_BLOCK_TYPES]


def _inline_data(block: dict, number: int) -> str:
    """The base64 text of one block, in any of LangChain's, OpenAI's and Anthropic's spellings."""
    source = block.get("source")
    if isinstance(source, dict):  # Anthropic: {"type": "image", "source": {"type": "base64", "data": ...}}
        block = {**block, "data": source.get("data"), "url": source.get("url")}
    url = block.get("image_url", block.get("url"))
    if isinstance(url, dict):
        url = url.get("url")
    for key in ("base64", "data"):
        if isinstance(block.get(key), str):
            return block[key]
    if isinstance(url, str):
        match = _DATA_URL.match(url.strip())
        if match:
            return match["data"]
        raise ImageInputError(f"picture {number} is a link; send pictures inline (base64 or a data: URL): "
                              "Keel does not fetch what a question links to")
    raise ImageInputError(f"picture {number} has no inline data (base64 or a data: URL)")


def question_images(content: Any, cfg: InputSettings) -> list[QuestionImage]:
    """The pictures of a question's content, decoded and checked against the deployment's limits.
    A block that is neither text nor a picture (audio, video, a file, a link of any other kind) is
    refused: a model server may fetch what such a block names."""
    if isinstance(content, list):
        for number, part in enumerate(content, 1):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            if kind != "text" and kind not in IMAGE_BLOCK_TYPES:
                raise ImageInputError(f"part {number} of the question is {kind!r}; a question is text and "
                                      "pictures only")
    blocks = image_blocks(content)
    if len(blocks) > cfg.max_question_images:
        raise ImageInputError(f"the question carries {len(blocks)} pictures; at most {cfg.max_question_images} "
                              "are taken")
    images = []
    for number, block in enumerate(blocks, 1):
        encoded = _inline_data(block, number)
        if len(encoded) * 3 // 4 > cfg.max_question_image_bytes:
            raise ImageInputError(f"picture {number} is larger than {cfg.max_question_image_bytes:,} bytes")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ImageInputError(f"picture {number} is not valid base64") from None
        try:
            info = inspect_image(data)
        except ValueError as error:
            raise ImageInputError(f"picture {number} cannot be read: {error}") from None
        images.append(QuestionImage(data, info.mime_type))
    return images


def read_images(images: Iterable[QuestionImage], reader: Callable[[bytes], str], cfg: InputSettings) -> list[str]:
    """The text of each picture (empty where none could be read), each cut to ``max_image_text_chars``."""
    texts = []
    for image in images:
        try:
            text = " ".join(reader(image.data).split())
        except Exception as error:  # noqa: BLE001 - an unreadable picture is said in the answer, not a failed turn
            log.warning("a question's picture could not be read (%s: %s)", type(error).__name__, str(error)[:200])
            text = ""
        texts.append(text[: cfg.max_image_text_chars].strip())
    return texts


def question_with_image_text(question: str, texts: list[str]) -> str:
    """The question with the text read from its pictures, for a text-only model. The label has no
    name or number of its own: the checks that want a question's names and numbers in the context
    must see only the asker's and the pictures'."""
    read = [f'"{text}"' for text in texts if text]
    if not read:
        return question
    label = "the picture reads" if len(read) == 1 else "the pictures read"
    return f"{question.strip()} ({label}: {'; '.join(read)})"


def image_note(texts: list[str]) -> str:
    """What the answer says about the pictures: what was read from them, or that nothing could be."""
    if not texts:
        return ""
    read = [f'picture {n}: "{text}"' for n, text in enumerate(texts, 1) if text]
    unread = [str(n) for n, text in enumerate(texts, 1) if not text]
    said = []
    if read:
        said.append("From your " + ("picture" if len(texts) == 1 else "pictures") + " I could read "
                    + ("; ".join(read) if len(texts) > 1 else f'"{texts[0]}"') + ".")
    if unread:
        said.append("I could not read any text in " + ("your picture" if len(texts) == 1
                                                        else "picture " + ", ".join(unread)) + ".")
    return " ".join(said)


def with_images(messages: list, parts: list[dict]) -> list:
    """``messages`` with the question's image parts added to the last human message (the question)."""
    if not parts:
        return messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.type == "human":
            text = message.content if isinstance(message.content, str) else ""
            content = [{"type": "text", "text": text}, *parts] if text else list(parts)
            return [*messages[:index], message.model_copy(update={"content": content}), *messages[index + 1:]]
    return messages
