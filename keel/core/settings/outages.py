"""What a dead server costs: how a conversation step is saved while MongoDB is away
(keel/stores/resilient_history.py) and how often a failed model call is re-run (chains/model_recovery.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class OutageSettings(CheckedSettings):
    """Retries and bounds while MongoDB or the chat model is unavailable."""

    history_save_attempts: int = field(
        default=3, metadata={"doc": "Tries to save a conversation step when MongoDB fails (each bounded by "
                             "connect_timeout_s) before the step is kept in memory to be saved when it is back.",
                             **AT_LEAST_ONE}
    )
    history_retry_backoff_s: float = field(
        default=0.5, metadata={"doc": "Pause before the second try to reach MongoDB, in seconds; doubled for each "
                               "further one.", **NON_NEGATIVE}
    )
    history_retry_interval_s: float = field(
        default=10.0, metadata={"doc": "While conversation steps wait in memory, how often a new save tries "
                                "MongoDB again, in seconds (in between they queue at once, so an answer is not "
                                "delayed).", **POSITIVE}
    )
    history_max_pending_writes: int = field(
        default=10_000, metadata={"doc": "Most conversation steps kept in memory while MongoDB is away (a turn "
                                  "writes ~10); past it a run fails with 'conversation store unavailable' "
                                  "instead of the server's memory growing without bound.", **AT_LEAST_ONE}
    )
    model_failure_retries: int = field(
        default=1, metadata={"doc": "When the chat model fails, how often an attempt is re-run (after the "
                             "embedded server is restarted if it died) before the answer is status error.",
                             **NON_NEGATIVE}
    )
