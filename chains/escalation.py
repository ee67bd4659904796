"""Which pool model writes an attempt: the configured one, or a stronger one for the retries.

A retry happens when the attempts before it stayed below the quality threshold (or were refused by
the answer checks). A small model asked again with a stricter prompt often fails the same way; the
pool's larger model is slower but answers more of those, so a deployment that names an
``escalation_model`` pays its cost only on the questions that need it.
"""

from __future__ import annotations

import dataclasses
import logging

from keel.components import Components
from keel.core.configuration import Configuration
from keel.runtime.model_pool import is_installed, pool_model

log = logging.getLogger("keel.answer")


def settings_for_attempt(
    cfg: Configuration, attempt: int, components: Components, pictures: bool = False
) -> Configuration:
    """``cfg`` with ``chat_model`` set to the model that writes attempt ``attempt``. The retry goes to
    ``escalation_model`` only when that is a stronger pool model, on a server of its own (its
    model_endpoints entry, or its embedded one), with its tokenizer at hand (installed here, or
    model_tokenizers), and not while the turn's pictures are sent to a model that reads them."""
    stronger = cfg.escalation_model
    if not stronger or stronger == cfg.chat_model or attempt < cfg.escalate_from_attempt:
        return cfg
    if components.chat_model is not None or cfg.chat_model_gguf or (pictures and cfg.chat_model_reads_images):
        return cfg  # an application's own model, a deployment's own file, or pictures a pool model cannot read
    model = pool_model(stronger)
    if model.strength <= pool_model(cfg.chat_model).strength:
        return cfg  # never down the pool
    if cfg.llm_endpoint and not cfg.model_endpoints.get(stronger):
        return cfg  # the same server would answer: no stronger model to ask
    if not (cfg.model_tokenizers.get(stronger) or is_installed(model, cfg)):
        log.warning("escalation_model %s is not installed (keel models install %s) and has no model_tokenizers "
                    "entry; the retry uses %s", stronger, stronger, cfg.chat_model)
        return cfg
    return dataclasses.replace(cfg, chat_model=stronger)
