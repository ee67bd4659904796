"""The web chat page's files (keel/server/web/) and the headers they are sent with.

The shell and its assets hold no data (the page fetches everything with the user's key), so the
gate lets exactly these paths through without a key, for GET and HEAD only (``is_open_page``);
every route that returns data needs the key like any other. They are plain HTML, JavaScript
modules and CSS shipped inside the package: no build step, nothing fetched from elsewhere. A
strict Content-Security-Policy goes with each: scripts and styles only from this origin and no
inline script, so text from a document or an answer can never run as code.
"""

from __future__ import annotations

from importlib.resources import files

WEB_FOLDER = files("keel.server") / "web"
# path -> (file under keel/server/web/, media type). Exact paths only: nothing else is opened.
PAGE_ASSETS: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/web/style.css": ("style.css", "text/css; charset=utf-8"),
    "/web/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/web/api.js": ("api.js", "text/javascript; charset=utf-8"),
    "/web/chat.js": ("chat.js", "text/javascript; charset=utf-8"),
    "/web/answer.js": ("answer.js", "text/javascript; charset=utf-8"),
    "/web/documents.js": ("documents.js", "text/javascript; charset=utf-8"),
    "/web/conversations.js": ("conversations.js", "text/javascript; charset=utf-8"),
    "/web/keel.svg": ("keel.svg", "image/svg+xml"),
}
OPEN_PAGE_PATHS = frozenset(PAGE_ASSETS)
OPEN_PAGE_METHODS = frozenset({"GET", "HEAD"})
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
))
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # a new release's page is used at once, revalidated cheaply
}


# The pages Keel serves but did not write: LangServe's playground injects its schemas in an inline
# script and compiles its form validators at run time (ajv's new Function: 'unsafe-eval'); FastAPI's
# /docs loads Swagger UI from its CDN with an inline start-up script. Their policy lets exactly that
# run, no plugins, no <base>, and, like the chat page's, keeps them out of other sites' frames.
TOOL_PAGE_PREFIXES = ("/chat/playground", "/docs", "/redoc")
SWAGGER_CDN = "https://cdn.jsdelivr.net"
TOOL_PAGE_POLICY = "; ".join((
    "default-src 'self'",
    f"script-src 'self' 'unsafe-inline' 'unsafe-eval' {SWAGGER_CDN}",
    f"style-src 'self' 'unsafe-inline' {SWAGGER_CDN}",
    "img-src 'self' data: https://fastapi.tiangolo.com",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
))
TOOL_PAGE_HEADERS = {
    "Content-Security-Policy": TOOL_PAGE_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def is_tool_page(path: str) -> bool:
    """The playground's and the API docs' pages: sent with TOOL_PAGE_HEADERS."""
    return path.startswith(TOOL_PAGE_PREFIXES)


def is_open_page(method: str, path: str) -> bool:
    """The page's shell and assets: served without a key (they hold no data)."""
    return method in OPEN_PAGE_METHODS and path in OPEN_PAGE_PATHS


def asset_bytes(name: str) -> bytes:
    """A file of the web chat page, as shipped with Keel."""
    return (WEB_FOLDER / name).read_bytes()
