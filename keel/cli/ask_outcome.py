"""How ``keel ask`` ends: its exit code, and the warning when an answer could not be saved.

Exit codes: 0 answered (any status but ``error``) and saved; 1 status ``error`` (no answer: the
model did not respond, the message names it); 3 answered but not saved to the conversation
history (MongoDB was unavailable; the answer is still printed, the warning names the server).
"""

from __future__ import annotations

import sys
from typing import TextIO

EXIT_OK, EXIT_ERROR, EXIT_NOT_SAVED = 0, 1, 3


def turn_saved(graph) -> bool:
    """Whether the whole turn reached the conversation history: writes that waited for MongoDB
    during the answer get one more try now. True for a checkpointer that never queues."""
    checkpointer = getattr(graph, "checkpointer", None)
    flush = getattr(checkpointer, "flush", None)
    return True if flush is None else bool(flush())


def ask_exit_code(out: dict, not_saved_because: str | None, err: TextIO | None = None) -> int:
    """Warn on stderr about an error status or an unsaved turn (``not_saved_because``: the
    history's own words for why), and return the exit code."""
    err = err or sys.stderr
    saved = not_saved_because is None
    if not saved:
        why = not_saved_because
        print(f"keel: warning: the answer above was not saved to conversation {out.get('conversation_id')}: {why}. "
              "A follow-up in this conversation will not see this turn.", file=err)
    if out.get("status") == "error":
        reasons = out.get("reasons") or []
        model = [r.split(":", 1)[1] for r in reasons if r.startswith("model_unavailable:")]
        refused = [r.split(":", 1)[1] for r in reasons if r.startswith("model_refused:")]
        detail = (f"the language model at {model[0]} did not answer, also after a retry" if model else
                  f"the language model at {refused[0]} refused the request (its log says why)" if refused else
                  "no answer (status error)")
        print(f"keel: error: {detail}", file=err)
        return EXIT_ERROR
    return EXIT_OK if saved else EXIT_NOT_SAVED
