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


def settings_for_attempt(cfg: Configuration, attempt: int, components: Components) -> Configuration:
    """``cfg`` with ``chat_model`` set to the model that writes attempt ``attempt``."""
    stronger = cfg.escalation_model
    if not stronger or stronger == cfg.chat_model or attempt < cfg.escalate_from_attempt:
        return cfg
    if components.chat_model is not None or cfg.chat_model_gguf:
        return cfg  # an application's own model, or a deployment's own file: not the pool's to replace
    served_elsewhere = bool(cfg.model_endpoints.get(stronger) or cfg.llm_endpoint)
    if not served_elsewhere and not is_installed(pool_model(stronger), cfg):
        log.warning("escalation_model %s is not installed (keel models install %s); the retry uses %s",
                    stronger, stronger, cfg.chat_model)
        return cfg
    return dataclasses.replace(cfg, chat_model=stronger)
