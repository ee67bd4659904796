"""The chat model's real tokenizer, for the token budget and context fitting.

Read from the GGUF once (about 7 s of metadata parsing) and cached as a plain tokenizer folder
under KEEL_HOME, so later processes load it in a fraction of a second.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.model_pool import DEFAULT_CHAT_MODEL, chat_gguf, is_installed, pool_model
from keel.runtime.servers import keel_home

# transformers is imported inside the loaders below: it takes seconds to import (torch).

log = logging.getLogger(__name__)
# One tokenizer load at a time in the process, the import included, for every Keel tokenizer (the
# chat model's here, the embedding model's through load_auto_tokenizer): transformers resolves
# AutoTokenizer lazily, and two threads doing that at once (a server's first requests arriving
# together, an upload beside a question) can see it half made ("cannot import name
# 'AutoTokenizer'"). A lock, not once-per-process: lru_cache alone lets concurrent first calls all load.
_lock = threading.RLock()


def chat_gguf_path(cfg: RuntimeSettings) -> Path:
    """The configured chat model's GGUF: a deployment's own file, or the pool model's."""
    return chat_gguf(cfg)


def has_own_file(cfg: RuntimeSettings) -> bool:
    """Is the chat model a pool model other than the default with its GGUF installed here (so its own
    tokenizer is at hand, whatever chat_tokenizer_path says of the deployment's endpoint model)?"""
    return (not cfg.chat_model_gguf and cfg.chat_model != DEFAULT_CHAT_MODEL
            and is_installed(pool_model(cfg.chat_model), cfg))


def model_cache_dir(cfg: RuntimeSettings, gguf: Path) -> Path:
    """Where Keel keeps what it derives from a GGUF (tokenizer, de-quantized weights)."""
    return keel_home(cfg) / "models" / gguf.stem


def get_chat_tokenizer(cfg: RuntimeSettings):
    """The tokenizer of the configured chat model (a transformers fast tokenizer): the pool model's
    own (``model_tokenizers``, else its installed GGUF); ``chat_tokenizer_path`` is the deployment's
    endpoint model's, used for every model that has neither."""
    named = cfg.model_tokenizers.get(cfg.chat_model) if not cfg.chat_model_gguf else None
    if named:
        return _load_tokenizer_dir(str(named))
    if cfg.chat_tokenizer_path and not has_own_file(cfg):
        return _load_tokenizer_dir(str(cfg.chat_tokenizer_path))
    gguf = chat_gguf_path(cfg)
    return _load_gguf_tokenizer(str(gguf), str(model_cache_dir(cfg, gguf) / "tokenizer"))


class TokenizerFile:
    """A model folder's ``tokenizer.json`` through the ``tokenizers`` library: the fast tokenizer's
    offsets and counts the splitters use, loaded in a fraction of a second where transformers takes
    seconds to import (in every process that splits: a ``keel ingest``, each ingest worker). It
    counts as transformers' fast tokenizer of the same folder does: no truncation, no padding."""

    is_fast = True

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self.backend_tokenizer = Tokenizer.from_file(str(self.path))
        self.backend_tokenizer.no_truncation()
        self.backend_tokenizer.no_padding()

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        encoding = self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return {"input_ids": encoding.ids, "attention_mask": encoding.attention_mask}


def load_auto_tokenizer(path, **options):
    """``AutoTokenizer.from_pretrained`` of a local folder, one load at a time in the process."""
    with _lock:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path, local_files_only=True, **options)


@lru_cache(maxsize=4)
def _load_tokenizer_dir(path: str):
    return load_auto_tokenizer(path)


@lru_cache(maxsize=4)
def _load_gguf_tokenizer(gguf: str, cache_dir: str):
    cache = Path(cache_dir)
    with _lock:
        from transformers import AutoTokenizer

        if (cache / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(cache, local_files_only=True)
        gguf_path = Path(gguf)
        if not gguf_path.is_file():
            raise FileNotFoundError(f"chat model GGUF not found: {gguf_path}")
        log.info("reading the tokenizer from %s (once; cached in %s)", gguf_path.name, cache)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, local_files_only=True)
        cache.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(cache)
        return tokenizer


def count_tokens(tokenizer, text: str) -> int:
    """The number of tokens ``text`` is, without special tokens."""
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def truncate_to_tokens(tokenizer, text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_tokens`` tokens, cut on a token boundary."""
    if max_tokens <= 0:
        return ""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    if len(offsets) <= max_tokens:
        return text
    return text[: offsets[max_tokens - 1][1]].rstrip()
