"""Page tests in a real browser: headless Chromium driven by Selenium, and an ASGI app served on a
loopback port for it to open.

The browser is Debian's ``chromium`` with its matching ``chromium-driver`` (scripts/setup.sh
installs both when it can); no browser is downloaded at test time. Where they are missing, a page
test is skipped with the reason, never failed. ``chromium_page`` keeps the page's console
(``goog:loggingPrefs``), so a test can assert that the page raised no error, and can send headers
with every request the page makes (an API key: the server's pages call its routes from the
browser).

Use it as::

    with live_server(app) as base_url, chromium_page(headers=bearer(key)) as driver:
        driver.get(f"{base_url}/chat/playground/")
        assert not severe_console_errors(driver)
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Mapping

# Debian's names first; other distributions name the same programs differently.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
# A page that renders nothing is noticed long before this; a loaded CI machine needs the margin.
PAGE_TIMEOUT_S = 30.0
SERVER_START_TIMEOUT_S = 15.0


def _first_on_path(names: tuple[str, ...]) -> str | None:
    return next((path for path in map(shutil.which, names) if path), None)


def browser_missing_reason() -> str | None:
    """Why page tests cannot run here, or None when they can."""
    try:
        import selenium  # noqa: F401 - only asked whether it is installed
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if _first_on_path(CHROMIUM_NAMES) is None:
        return "no Chromium on PATH (Debian: apt-get install chromium chromium-driver; scripts/setup.sh does it)"
    if _first_on_path(DRIVER_NAMES) is None:
        return "no chromedriver on PATH (Debian: apt-get install chromium-driver; scripts/setup.sh does it)"
    return None


@contextlib.contextmanager
def chromium_page(headers: Mapping[str, str] | None = None, width: int = 1280, height: int = 900) -> Iterator:
    """A headless Chromium (a Selenium WebDriver) that records the page's console, sending
    ``headers`` with every request the page makes; skips the test when no browser is installed."""
    import pytest

    reason = browser_missing_reason()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _first_on_path(CHROMIUM_NAMES)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--disable-extensions", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=_first_on_path(DRIVER_NAMES)), options=options)
    try:
        driver.set_page_load_timeout(PAGE_TIMEOUT_S)
        if headers:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": dict(headers)})
        yield driver
    finally:
        driver.quit()


def console_entries(driver) -> list[dict]:
    """The console messages the page logged since the last call (each is read once)."""
    return list(driver.get_log("browser"))


def severe_console_errors(entries: list[dict]) -> list[str]:
    """The messages among ``entries`` that are errors: uncaught exceptions, failed requests."""
    return [entry["message"] for entry in entries if entry.get("level") == "SEVERE"]


def wait_until(driver, condition, what: str, timeout_s: float = PAGE_TIMEOUT_S):
    """``condition(driver)``'s first truthy value; a page that never gets there fails the test
    naming ``what`` and the console's errors (a page that crashed says why). An element the page
    redrew meanwhile (React pages do, often) is looked up again on the next try, so ``condition``
    may also act on the page (click, type) and return True once it could."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    redrawn = (NoSuchElementException, StaleElementReferenceException)
    try:
        return WebDriverWait(driver, timeout_s, ignored_exceptions=redrawn).until(condition)
    except TimeoutException:
        errors = severe_console_errors(console_entries(driver))
        raise AssertionError(f"{what}: not there after {timeout_s:.0f} s; console errors: {errors}") from None


def free_loopback_socket() -> socket.socket:
    """A socket bound to a loopback port the OS picked, for a server to listen on."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.contextmanager
def live_server(app) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a background thread; yields its base URL and stops it
    afterwards. The port is bound before the server starts, so no other process can take it."""
    import uvicorn

    sock = free_loopback_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    host, port = sock.getsockname()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=SERVER_START_TIMEOUT_S)
        sock.close()


def artifacts_folder(tmp_path, name: str):
    """Where a page test saves its screenshots: ``$KEEL_TEST_ARTIFACTS/<name>`` when that is set (a
    CI job can keep the folder), else the test's own ``tmp_path``."""
    import os
    from pathlib import Path

    root = os.environ.get("KEEL_TEST_ARTIFACTS")
    folder = Path(root) / name if root else Path(tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def as_phone(driver, width: int = 390, height: int = 844) -> None:
    """Lay the page out as a phone of ``width`` CSS pixels would (a desktop window cannot be made
    that narrow: Chromium keeps a minimum window width)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
