"""What a chat server's error says, in the shapes TGI, vLLM and llama.cpp's server answer with.

TGI: ``{"error": "Input validation error: ...", "error_type": "validation"}`` (422; 424 when the
model failed, 429 when overloaded). vLLM (OpenAI's shape): ``{"object": "error", "message": ...,
"type": "BadRequestError", "code": 400}``, or ``{"error": {"message": ..., "type": ...}}``.
llama.cpp's server: ``{"error": {"code": 400, "message": ..., "type": "invalid_request_error"}}``.

A refused request (400, 413, 422: too long for the model's window, a parameter it does not take)
is refused again if sent again, so the answer loop does not retry it as an outage; an overloaded
or failing server (429, 5xx, a dropped connection) may answer the next try.
"""

from __future__ import annotations

from dataclasses import dataclass

REFUSED_REQUEST_STATUS = frozenset({400, 413, 422})
MESSAGE_CHARS = 300  # of the server's message kept for the log


@dataclass(frozen=True)
class EndpointError:
    """A model server's error in a form the answer path can act on: status, message and kind."""
    status: int | None
    message: str
    kind: str = ""

    @property
    def refused(self) -> bool:
        """The server refused this request itself: the same request will be refused again."""
        return self.status in REFUSED_REQUEST_STATUS


def _body(response) -> object:
    try:
        return response.json()
    except Exception:  # noqa: BLE001 - not JSON (a proxy's HTML page): the text is the message
        return getattr(response, "text", "") or ""


def endpoint_error(error: BaseException) -> EndpointError | None:
    """The status, message and kind of an HTTP error from a chat server; None for anything else."""
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    if response is None or not isinstance(status, int):
        return None
    body = _body(response)
    message, kind = "", ""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):  # llama.cpp's server, OpenAI's shape
            message, kind = str(inner.get("message") or ""), str(inner.get("type") or "")
        elif isinstance(inner, str):  # TGI
            message, kind = inner, str(body.get("error_type") or "")
        elif body.get("object") == "error" or "message" in body:  # vLLM
            message, kind = str(body.get("message") or ""), str(body.get("type") or "")
    elif isinstance(body, str):
        message = body
    return EndpointError(status, " ".join(message.split())[:MESSAGE_CHARS] or f"HTTP {status}", kind)
