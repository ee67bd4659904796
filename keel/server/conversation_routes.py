"""The caller's conversations for the web page: ``GET /conversations`` lists them, the most recently
active first, each titled by its first question; ``GET /conversations/{id}`` reads one back with its
messages, to resume it. New turns go through /chat/events with the same thread id.

Which threads are the caller's comes from the owners' registry (keel/server/ownership.py), their
messages from the graph's checkpointer (MongoDB by default), read through LangGraph's
``get_state``. Each user names their own conversations (keel/server/ownership.py): an id the caller
has not used is a 404, whoever else has used it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus
from keel.server.document_routes import checked_id
from keel.server.ownership import ThreadOwners
from keel.server.web_page import caller


def message_text(message: BaseMessage) -> str:
    """A stored message's text, whatever its content is."""
    return message.text if isinstance(message.text, str) else str(message.content)


def is_open_mode(answer: str, status: str | None, cfg: Configuration) -> bool:
    """An answer from the model's general knowledge, not from the user's documents: Keel marks its
    text with ``open_mode_mark`` (nodes/answering.py), which is how a stored turn is recognised."""
    mark = cfg.open_mode_mark.strip().lower()
    return status == AnswerStatus.SUCCESS.value and bool(mark) and answer.strip().lower().startswith(mark)


def keel_fields(message: AIMessage) -> dict[str, Any]:
    """What Keel filed beside an answer (nodes/answering.py ``history_message``)."""
    fields = message.additional_kwargs.get("keel")
    return fields if isinstance(fields, dict) else {}


def message_citations(message: Any) -> list[dict]:
    """The passages behind an answer, numbered as its [Source N]: file, page and passage text."""
    if not isinstance(message, AIMessage):
        return []
    return [dict(citation) for citation in keel_fields(message).get("citations") or [] if isinstance(citation, dict)]


def turn_citations(final_state: dict) -> list[dict]:
    """The passages behind the answer that ``final_state`` (the graph's last values) ends with."""
    messages = final_state.get("messages") or []
    return message_citations(messages[-1]) if messages else []


def page_message(message: BaseMessage, cfg: Configuration) -> dict | None:
    """A stored message as the page shows it; None for anything but a question or an answer."""
    if isinstance(message, HumanMessage):
        return {"role": "user", "text": message_text(message)}
    if not isinstance(message, AIMessage):
        return None
    fields = keel_fields(message)
    text = message_text(message)
    status = fields.get("status") or AnswerStatus.SUCCESS.value
    return {"role": "assistant", "text": text, "status": status, "sources": list(fields.get("sources") or []),
            "citations": message_citations(message), "open_mode": is_open_mode(text, status, cfg)}


def title_of(messages: list[BaseMessage], cfg: Configuration) -> str:
    """The conversation's first question, cut to ``conversation_title_chars``."""
    first = next((message_text(m) for m in messages if isinstance(m, HumanMessage)), "")
    first = " ".join(first.split())
    limit = cfg.conversation_title_chars
    return first if len(first) <= limit else first[: max(1, limit - 1)].rstrip() + "…"


class Conversations:
    """Reads the caller's conversations from the graph's checkpointer."""

    def __init__(self, graph, owners: ThreadOwners, cfg: Configuration):
        self.graph, self.owners, self.cfg = graph, owners, cfg

    def messages(self, thread_id: str) -> tuple[list[BaseMessage], str | None]:
        """The thread's messages and when its last checkpoint was written (ISO 8601), or none."""
        if getattr(self.graph, "checkpointer", None) is None:
            return [], None  # a graph without memory keeps no conversations
        snapshot = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return list(snapshot.values.get("messages") or []), snapshot.created_at

    def listed(self, user_id: str) -> list[dict]:
        rows = []
        for conversation, thread_id in self.owners.owned(user_id, self.cfg.web_conversations_listed):
            messages, updated_at = self.messages(thread_id)
            if not any(isinstance(m, HumanMessage) for m in messages):
                continue  # claimed by an upload or a refused request: nothing to resume
            rows.append({"conversation_id": conversation, "title": title_of(messages, self.cfg),
                         "updated_at": updated_at,
                         "questions": sum(isinstance(m, HumanMessage) for m in messages)})
        return sorted(rows, key=lambda row: _timestamp(row["updated_at"]), reverse=True)

    def read(self, user_id: str, conversation_id: str) -> dict:
        thread_id = self.owners.thread(conversation_id, user_id)
        if thread_id is None:
            raise HTTPException(status_code=404, detail="conversation not found")
        messages, updated_at = self.messages(thread_id)
        shown = [row for row in (page_message(m, self.cfg) for m in messages) if row is not None]
        return {"conversation_id": conversation_id, "title": title_of(messages, self.cfg), "updated_at": updated_at,
                "messages": shown}


def _timestamp(iso: str | None) -> float:
    try:
        return datetime.fromisoformat(iso).timestamp() if iso else 0.0
    except ValueError:
        return 0.0


def add_conversation_routes(app: FastAPI, cfg: Configuration, graph, owners: ThreadOwners) -> None:
    """GET /conversations and GET /conversations/{conversation_id}, the caller's only."""
    conversations = Conversations(graph, owners, cfg)

    @app.get("/conversations")
    def list_conversations(request: Request) -> dict:
        return {"conversations": conversations.listed(caller(request))}

    @app.get("/conversations/{conversation_id}")
    def read_conversation(conversation_id: str, request: Request) -> dict:
        checked_id("conversation_id", conversation_id, cfg)
        return conversations.read(caller(request), conversation_id)
