"""Who is asking, in which conversation, about which documents: set per request (on the server,
the user is always the caller's own, from the credential)."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import CheckedSettings
from keel.core.settings.scope import REQUEST, default_scope


@default_scope(REQUEST)
@dataclass(kw_only=True, frozen=True)
class IdentitySettings(CheckedSettings):
    """Whose documents are searched and which conversation a turn belongs to."""

    user_id: str = field(
        default="default",
        metadata={"doc": "Owner of the documents searched (uuid tag); on the server it is the caller's own.",
                  "max_chars_setting": "max_request_id_chars", "min_chars": 1},
    )
    thread_id: str | None = field(
        default=None,
        metadata={"doc": "Conversation id; LangGraph's thread_id.",
                  "max_chars_setting": "max_request_id_chars"},
    )
    doc_ids: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "Documents the user attached to this question; retrieval is limited to them.",
                  "max_items_setting": "max_request_doc_ids",
                  "max_chars_setting": "max_request_id_chars", "min_chars": 1},
    )
