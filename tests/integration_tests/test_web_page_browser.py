"""The web chat page (keel serve's /) in a real headless Chromium, over Keel's app built on fakes (a
scripted model, a lighthouse retriever, an in-memory document store, in-memory keys and owners):
signed out only the sign-in shows; every answer status looks different (a grounded answer with a
citation that opens its passage, "I don't know", a refusal, too long, an error with Retry, an
open-mode answer with its mark); the streamed draft follows keel.token / keel.revert /
keel.discard and shows the continuation as an indicator, never as answer text; uploads of several
files at once show each file's outcome, Keel's reason for a refused one, a password prompt for an
encrypted PDF, the list and delete; conversations resume after a reload and follow-ups stay in their
thread; signing out leaves nothing of the user on the page; a phone width is readable. Screenshots
of each state go to the test's folder (tests/browser.py ``artifacts_folder``). Skipped, with the
reason, where no Chromium is installed. The real `keel serve` on the embedded parts is driven by
test_web_chat_browser.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from keel.core.configuration import Configuration
from tests.browser import (artifacts_folder, as_phone, chromium_page, console_entries, live_server,
                           severe_console_errors, wait_until)
from tests.pdf_factory import make_pdf
from tests.web_fakes import FACT, FAILING, QUESTION, REFUSED, TOO_LONG, UNANSWERABLE, web_page_app

pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402 - only once the skip above has passed
from selenium.webdriver.common.keys import Keys  # noqa: E402

USERS = ("alice", "mallory", "carol", "dave", "erin")


@pytest.fixture(scope="module")
def site():
    """The page's base URL, the users' keys and the document store, on a live server."""
    app, keys, store = web_page_app(users=USERS)
    with live_server(app) as base_url:
        yield base_url, keys, store


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def shown(driver, element_id: str) -> bool:
    found = driver.find_elements(By.ID, element_id)
    return bool(found) and found[0].is_displayed()


def open_page(driver, base_url: str) -> None:
    driver.get(f"{base_url}/")
    wait_until(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true",
               "the page, settled")


def sign_in(driver, key: str, user: str) -> None:
    field = driver.find_element(By.ID, "api-key")
    field.clear()
    field.send_keys(key + Keys.ENTER)
    wait_until(driver, lambda d: shown(d, "workspace") and d.find_element(By.ID, "user-name").text == user,
               f"the workspace of {user}")


def finished_answers(driver):
    return css(driver, "#messages .answer:not(.answer--pending)")


def ask(driver, question: str):
    """Type the question, send it with Enter, and return the finished answer's element."""
    before = len(finished_answers(driver))
    driver.find_element(By.ID, "question").send_keys(question + Keys.ENTER)
    wait_until(driver, lambda d: len(finished_answers(d)) > before and d.find_element(By.ID, "ask").is_enabled(),
               f"the answer to {question[:40]!r}")
    return finished_answers(driver)[-1]


def unexpected_errors(entries, *allowed: str) -> list[str]:
    """Console errors other than the failed requests a test provokes on purpose (``allowed``:
    fragments such as "status of 401")."""
    return [message for message in severe_console_errors(entries) if not any(part in message for part in allowed)]


def test_signed_out_only_the_sign_in_shows_and_a_wrong_key_is_refused_on_the_page(site, tmp_path):
    base_url, keys, _ = site
    shots = artifacts_folder(tmp_path, "web-page-fakes")
    with chromium_page() as driver:
        open_page(driver, base_url)
        assert shown(driver, "signin") and not shown(driver, "workspace") and not shown(driver, "account")
        driver.save_screenshot(str(shots / "signed-out.png"))
        driver.find_element(By.ID, "api-key").send_keys("keel_not-a-real-key" + Keys.ENTER)
        wait_until(driver, lambda d: "not accepted" in d.find_element(By.ID, "signin-problem").text,
                   "the page saying the key was not accepted")
        assert not shown(driver, "workspace")
        assert driver.execute_script("return window.location.href") == f"{base_url}/"  # never in the URL
        driver.save_screenshot(str(shots / "wrong-key.png"))
        assert unexpected_errors(console_entries(driver), "/me - Failed to load resource: the server responded "
                                 "with a status of 401") == []


def test_each_answer_status_reads_differently_and_a_citation_opens_its_passage(site, tmp_path):
    base_url, keys, _ = site
    shots = artifacts_folder(tmp_path, "web-page-fakes")
    with chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, keys["alice"], "alice")
        grounded = ask(driver, QUESTION)
        assert "answer--grounded" in grounded.get_attribute("class")
        assert "From your documents" in grounded.text and "Mara Holt" in grounded.text
        citation = grounded.find_element(By.CSS_SELECTOR, "button.citation")
        assert citation.text == "Source 1"
        citation.send_keys(Keys.ENTER)  # keyboard: a citation is a button
        dialog = driver.find_element(By.ID, "passage-dialog")
        wait_until(driver, lambda d: dialog.is_displayed(), "the cited passage's dialog")
        assert driver.find_element(By.ID, "passage-where").text == "handbook.pdf, page 3"
        assert driver.find_element(By.ID, "passage-text").text == FACT
        driver.save_screenshot(str(shots / "passage.png"))
        dialog.send_keys(Keys.ESCAPE)
        wait_until(driver, lambda d: not dialog.is_displayed(), "the dialog, closed with Escape")
        assert driver.switch_to.active_element == citation  # focus goes back where it was

        views = {"grounded": grounded}
        views["unknown"] = ask(driver, UNANSWERABLE)
        views["refused"] = ask(driver, REFUSED)
        views["too-long"] = ask(driver, TOO_LONG)
        views["error"] = ask(driver, FAILING)
        driver.find_element(By.ID, "open-mode").click()
        views["open"] = ask(driver, UNANSWERABLE)
        driver.find_element(By.ID, "open-mode").click()
        labels = {}
        for kind, answer in views.items():
            assert f"answer--{kind}" in answer.get_attribute("class"), (kind, answer.get_attribute("class"))
            labels[kind] = answer.find_element(By.CSS_SELECTOR, ".answer-label").text
        assert len(set(labels.values())) == len(labels), labels  # no two statuses read alike
        assert "I don't know based on your documents" in labels["unknown"]
        assert "can't help" in labels["refused"] and "Too long" in labels["too-long"]
        assert "went wrong" in labels["error"] and "Not from your documents" in labels["open"]
        colours = {kind: answer.value_of_css_property("border-left-color") for kind, answer in views.items()}
        assert len(set(colours.values())) == len(colours), colours  # and none looks alike either
        assert views["error"].find_elements(By.CSS_SELECTOR, "button.retry")
        assert not views["unknown"].find_elements(By.CSS_SELECTOR, "button.retry, button.citation")
        driver.save_screenshot(str(shots / "statuses.png"))

        questions = len(css(driver, "#messages .question"))
        retry = views["error"].find_element(By.CSS_SELECTOR, "button.retry")
        retry.click()  # asks the same question again, in place
        wait_until(driver, lambda d: not retried_button_still_there(retry) and d.find_element(By.ID, "ask").is_enabled()
                   and "answer--error" in views["error"].get_attribute("class"), "the retried answer (still failing)")
        assert len(css(driver, "#messages .question")) == questions  # in place, not a new question
        assert unexpected_errors(console_entries(driver)) == []


def retried_button_still_there(button) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        button.is_enabled()
        return True
    except StaleElementReferenceException:  # the answer was redrawn: the retry ran
        return False


def scripted_stream_app(events: list[tuple[str, dict]], pause_s: float):
    """The page with a /chat/events that plays ``events`` (one each ``pause_s``) and a page shell
    like Keel's: to watch the draft follow the stream's events in the browser."""
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from keel.server.web_page import add_web_page

    app = FastAPI()
    add_web_page(app, Configuration())

    @app.get("/documents")
    def documents() -> dict:
        return {"documents": []}

    @app.get("/conversations")
    def conversations() -> dict:
        return {"conversations": []}

    @app.post("/chat/events")
    async def chat_events() -> StreamingResponse:
        async def play():
            for name, data in events:
                await asyncio.sleep(pause_s)
                yield f"event: {name}\ndata: {json.dumps({'event': name, **data})}\n\n"

        return StreamingResponse(play(), media_type="text/event-stream")

    return app


# What the page records of the answer being written: every text the draft and the indicator show.
WATCH_DRAFT = """
window.seen = {draft: [], indicator: []};
new MutationObserver(() => {
  const answer = document.querySelector('#messages .answer--pending');
  if (!answer) return;
  const draft = answer.querySelector('.answer-text').textContent;
  const note = answer.querySelector('.indicator');
  if (window.seen.draft.at(-1) !== draft) window.seen.draft.push(draft);
  if (!note.hidden && window.seen.indicator.at(-1) !== note.textContent) window.seen.indicator.push(note.textContent);
}).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_the_draft_follows_the_stream_and_the_continuation_is_an_indicator_never_answer_text():
    """What the search found is a note before the draft; the continuation an indicator, never text."""
    indicator = "*[Generating continuation answer...]*"
    events = [
        ("keel.progress", {"stage": "found", "passages": 2, "sources": ["docs/clinic.md", "fees.md"]}),
        ("keel.attempt", {"attempt": 1, "strategy": "enhanced"}),
        ("keel.token", {"text": "The clinic opens"}),
        ("keel.token", {"text": " at 8 am"}),
        ("keel.continuation", {"text": indicator, "number": 1}),
        ("keel.token", {"text": " and the moon is cheese."}),
        ("keel.revert", {"text": "The clinic opens at 8 am", "reason": "continuation_dropped"}),
        ("keel.discard", {"attempt": 1, "reason": "low_quality"}),
        ("keel.attempt", {"attempt": 2, "strategy": "strict"}),
        ("keel.token", {"text": "The clinic opens at 8 am [Source 1]."}),
        ("keel.final", {"answer": "The clinic opens at 8 am on weekdays [Source 1].", "status": "success",
                        "route": "single_doc", "sources": [{"source": "clinic.md", "page": 1, "doc_id": "d1"}],
                        "citations": [{"number": 1, "source": "clinic.md", "page": 1, "doc_id": "d1",
                                       "text": "Open 8 am to 6 pm on weekdays."}]}),
    ]
    with live_server(scripted_stream_app(events, pause_s=0.25)) as base_url, chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, "keel_any", "default")  # no gate here: /me answers the development user
        driver.execute_script(WATCH_DRAFT)
        answer = ask(driver, "When does the clinic open?")
        seen = driver.execute_script("return window.seen")
        assert seen["draft"][:3] == ["", "The clinic opens", "The clinic opens at 8 am"]
        assert "The clinic opens at 8 am and the moon is cheese." in seen["draft"]
        after = seen["draft"][seen["draft"].index("The clinic opens at 8 am and the moon is cheese.") + 1:]
        assert after[:2] == ["The clinic opens at 8 am", ""]  # reverted, then the whole draft discarded
        assert all("Generating" not in draft and "[" not in draft[:1] for draft in seen["draft"])
        assert seen["indicator"] and all("Generating continuation" not in note for note in seen["indicator"])
        # what the search found shows first, until the draft's first words
        assert seen["indicator"][0] == ("Found 2 passages in clinic.md, fees.md; writing the answer and checking it "
                                        "against them…")
        assert "Continuing the answer" in seen["indicator"][1]
        text = answer.find_element(By.CSS_SELECTOR, ".answer-text")
        assert text.text == "The clinic opens at 8 am on weekdays Source 1."  # the final answer replaced the draft
        assert text.find_element(By.CSS_SELECTOR, "button.citation").text == "Source 1"  # drawn as [Source 1]
        assert not answer.find_elements(By.CSS_SELECTOR, ".indicator")
        assert unexpected_errors(console_entries(driver)) == []


def encrypted_pdf(path, password: str):
    """A one-page PDF encrypted with pypdf: it opens only with ``password``."""
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf(path.with_name("plain.pdf"), ["The harbour office keeps the spare keys in locker 12."])
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    with open(path, "wb") as out:
        writer.write(out)
    return path


def upload_row(driver, name: str):
    rows = [row for row in css(driver, "#uploads .upload") if row.find_element(By.CSS_SELECTOR, ".upload-name").text == name]
    return rows[0] if rows else None


def row_done(driver, name: str) -> str | None:
    row = upload_row(driver, name)
    if row is None:
        return None
    kind = row.get_attribute("class")
    return kind if ("upload--done" in kind or "upload--rejected" in kind) else None


def listed_documents(driver) -> list[str]:
    return [item.find_element(By.CSS_SELECTOR, ".document-name").text for item in css(driver, "#documents .document")]


def test_several_files_upload_at_once_each_with_its_outcome_then_list_and_delete(site, tmp_path):
    base_url, keys, _ = site
    shots = artifacts_folder(tmp_path, "web-page-fakes")
    notes = tmp_path / "ferry.md"
    notes.write_text("# Ferry\n\nThe ferry leaves pier 4 at 6 pm on weekdays.\n")
    locked = encrypted_pdf(tmp_path / "harbour-keys.pdf", "tide")
    legacy = tmp_path / "minutes.doc"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512)
    with chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, keys["carol"], "carol")
        assert listed_documents(driver) == [] and shown(driver, "no-documents")
        driver.find_element(By.ID, "file-input").send_keys("\n".join(str(p) for p in (notes, locked, legacy)))
        for name in ("ferry.md", "harbour-keys.pdf", "minutes.doc"):
            wait_until(driver, lambda d, name=name: row_done(d, name), f"the outcome of {name}")
        assert "upload--done" in row_done(driver, "ferry.md")
        locked_row = upload_row(driver, "harbour-keys.pdf")
        assert "upload--rejected" in locked_row.get_attribute("class")
        assert "encrypted PDF: a password is required" in locked_row.text
        assert "legacy Word 97-2003 (.doc) file" in upload_row(driver, "minutes.doc").text
        wait_until(driver, lambda d: listed_documents(d) == ["ferry.md"], "ferry.md in the list")
        item = css(driver, "#documents .document")[0]
        assert "1 page" in item.find_element(By.CSS_SELECTOR, ".document-meta").text
        driver.save_screenshot(str(shots / "uploads.png"))

        locked_row.find_element(By.CSS_SELECTOR, ".password-form input").send_keys("tide" + Keys.ENTER)
        wait_until(driver, lambda d: "upload--done" in upload_row(d, "harbour-keys.pdf").get_attribute("class"),
                   "the encrypted PDF, added with its password")
        wait_until(driver, lambda d: sorted(listed_documents(d)) == ["ferry.md", "harbour-keys.pdf"],
                   "both documents listed")

        ferry = next(item for item in css(driver, "#documents .document") if "ferry.md" in item.text)
        ferry.find_element(By.CSS_SELECTOR, "button.delete").click()
        ferry.find_element(By.CSS_SELECTOR, "button.delete-confirm").click()
        wait_until(driver, lambda d: listed_documents(d) == ["harbour-keys.pdf"], "ferry.md deleted")
        driver.find_element(By.ID, "clear-uploads").click()  # every upload has finished: all rows go
        assert css(driver, "#uploads .upload") == [] and not shown(driver, "clear-uploads")
        assert unexpected_errors(console_entries(driver), "/ingest - Failed to load resource: the server responded "
                                 "with a status of 422") == []


def test_a_conversation_resumes_after_a_reload_and_follow_ups_stay_in_its_thread(site, tmp_path):
    base_url, keys, _ = site
    shots = artifacts_folder(tmp_path, "web-page-fakes")
    with chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, keys["dave"], "dave")
        ask(driver, QUESTION)
        ask(driver, "And who built the lighthouse, again?")
        wait_until(driver, lambda d: len(css(d, "#conversations button.conversation")) == 1,
                   "one conversation in the list, the follow-up in it")
        driver.refresh()
        open_page(driver, base_url)
        wait_until(driver, lambda d: len(css(d, "#messages .question")) == 2, "the conversation, resumed")
        assert driver.find_element(By.ID, "chat-title").text == QUESTION
        css(driver, "#messages button.citation")[0].click()
        wait_until(driver, lambda d: d.find_element(By.ID, "passage-text").text == FACT,
                   "a citation of the resumed conversation, opened")
        driver.find_element(By.ID, "passage-close").click()
        driver.save_screenshot(str(shots / "resumed.png"))

        driver.find_element(By.ID, "new-conversation").click()
        assert css(driver, "#messages li") == [] and driver.find_element(By.ID, "chat-title").text == "New conversation"
        listed = css(driver, "#conversations button.conversation")
        assert len(listed) == 1 and QUESTION in listed[0].text
        listed[0].click()
        wait_until(driver, lambda d: len(css(d, "#messages .answer--grounded")) == 2, "the conversation, reopened")
        assert listed[0].get_attribute("aria-current") == "true"
        assert unexpected_errors(console_entries(driver)) == []


def test_signing_out_leaves_nothing_of_the_user_and_another_user_sees_none_of_it(site, tmp_path):
    base_url, keys, store = site
    store.add("erin", "doc-erin", "erin-payroll.pdf", 4)
    with chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, keys["erin"], "erin")
        ask(driver, QUESTION)
        wait_until(driver, lambda d: listed_documents(d) == ["erin-payroll.pdf"], "erin's document")
        driver.find_element(By.ID, "sign-out").click()
        wait_until(driver, lambda d: shown(d, "signin"), "the sign-in, after signing out")
        assert not shown(driver, "workspace")
        page = driver.execute_script("return document.body.innerHTML")
        assert "erin" not in page and "Mara Holt" not in page and "Varden" not in page
        assert driver.execute_script("return sessionStorage.length") == 0
        sign_in(driver, keys["mallory"], "mallory")
        wait_until(driver, lambda d: shown(d, "no-documents") and shown(d, "no-conversations"),
                   "mallory's empty lists")
        assert listed_documents(driver) == [] and css(driver, "#messages li") == []


def test_the_page_is_readable_at_a_phone_width(site, tmp_path):
    base_url, keys, _ = site
    shots = artifacts_folder(tmp_path, "web-page-fakes")
    with chromium_page() as driver:
        as_phone(driver)
        open_page(driver, base_url)
        driver.save_screenshot(str(shots / "phone-signed-out.png"))
        sign_in(driver, keys["alice"], "alice")
        assert not driver.find_element(By.ID, "documents-panel").get_attribute("open")  # folded away on a phone
        answer = ask(driver, QUESTION)
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        width = driver.execute_script("return window.innerWidth")
        box = answer.rect
        assert box["x"] >= 0 and box["x"] + box["width"] <= width  # the answer fits the screen
        driver.execute_script("arguments[0].scrollIntoView()", answer)
        driver.save_screenshot(str(shots / "phone-answer.png"))
        driver.find_element(By.CSS_SELECTOR, "#documents-panel summary").click()
        driver.execute_script("document.getElementById('documents-panel').scrollIntoView()")
        driver.save_screenshot(str(shots / "phone-documents.png"))
        assert unexpected_errors(console_entries(driver)) == []
