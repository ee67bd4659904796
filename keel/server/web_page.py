"""The web chat page for the people who ask: its shell at ``/``, its assets under ``/web/``
(keel/server/web_assets.py says which and with what headers) and ``GET /me``, the page's sign-in
check: the key's user and the limits the page checks before it sends anything.

The page's data routes live beside it: documents in keel/server/document_routes.py,
conversations in keel/server/conversation_routes.py.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from keel.core.configuration import Configuration
from keel.loaders.registry import supported_extensions
from keel.server.gate import DEV_USER
from keel.server.web_assets import PAGE_ASSETS, PAGE_HEADERS, asset_bytes


def caller(request: Request) -> str:
    """The user the gate found in the credential (the development user when authentication is off)."""
    return getattr(request.state, "user_id", None) or DEV_USER


def add_web_page(app: FastAPI, cfg: Configuration) -> None:
    """Register the page's shell and assets (no key needed) and GET /me (key needed)."""
    for path, (name, media_type) in PAGE_ASSETS.items():
        _add_asset(app, path, name, media_type)

    @app.get("/me")
    def me(request: Request) -> dict:
        return {
            "user_id": caller(request),
            "max_file_bytes": cfg.max_file_bytes,
            "max_question_chars": cfg.max_question_chars,
            "file_types": supported_extensions(),
        }


def _add_asset(app: FastAPI, path: str, name: str, media_type: str) -> None:
    body = asset_bytes(name)  # read once: the files ship with the package and do not change

    def asset() -> Response:
        return Response(body, media_type=media_type, headers=PAGE_HEADERS)

    app.add_api_route(path, asset, methods=["GET", "HEAD"], include_in_schema=False, name=f"web:{name}")
