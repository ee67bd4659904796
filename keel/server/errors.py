"""What a client learns when a request fails: the status, a short message and the request id.

Tracebacks and exception texts go to the server log under the same request id, never to the
client: they name hosts, ports, paths and library internals.
"""

from __future__ import annotations

import logging
import uuid

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

log = logging.getLogger("keel.server")

REQUEST_ID_HEADER = "X-Request-ID"
INTERNAL_ERROR = "Internal server error; quote the request id when reporting it."


def new_request_id() -> str:
    """A request id that names one request in the logs and in its error body."""
    return uuid.uuid4().hex


def request_id_of(request: Request) -> str:
    """The id the request was given on arrival (a new one when it has none)."""
    return getattr(request.state, "request_id", None) or new_request_id()


def error_body(status: int, message, request_id: str) -> dict:
    """Every error's JSON body: what went wrong, the status and the request id."""
    return {"detail": message, "status": status, "request_id": request_id}


def error_response(status: int, message, request_id: str, headers: dict | None = None) -> JSONResponse:
    """An error as a JSON response with its request id in the body and in a header."""
    return JSONResponse(error_body(status, message, request_id), status_code=status,
                        headers={REQUEST_ID_HEADER: request_id, **(headers or {})})


def add_error_handlers(app: FastAPI) -> None:
    """Every error the app raises leaves as ``{detail, status, request_id}``."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        return error_response(error.status_code, error.detail, request_id_of(request), dict(error.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, error: RequestValidationError) -> JSONResponse:
        # where and what, without echoing the (possibly huge) input back
        items = error.errors()
        broken = [item for item in items if item.get("type") == "json_invalid"]
        if broken:  # not JSON at all: say so, with the parser's reason, rather than "JSON decode error"
            reason = (broken[0].get("ctx") or {}).get("error", "")
            return error_response(422, f"the request body is not valid JSON{f' ({reason})' if reason else ''}",
                                  request_id_of(request))
        problems = [{"loc": list(item.get("loc", ())), "msg": item.get("msg", "")} for item in items]
        return error_response(422, problems, request_id_of(request))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, error: Exception) -> JSONResponse:
        request_id = request_id_of(request)
        log.error("request %s failed", request_id, exc_info=error)
        return error_response(500, INTERNAL_ERROR, request_id)
