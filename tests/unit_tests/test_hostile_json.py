"""Hostile JSON is the caller's mistake, never a 500: a body nested thousands deep, a number of
thousands of digits, or no JSON at all is refused with 400 (the gated routes) or 422 (the others),
naming the problem, on every route that reads JSON."""

from __future__ import annotations

import pytest

from keel.server.json_body import MAX_JSON_DEPTH, BadJSON, json_depth, parse_json_body
from tests.serving_fakes import bearer
from tests.unit_tests.test_human_review import served  # noqa: F401 - the app with a review queue
from tests.unit_tests.test_serving_app import ROUTES, ask, make_app

DEEP = b"[" * 5000 + b"]" * 5000
HUGE_NUMBER = ('{"input": {"messages": [{"type": "human", "content": "hi"}]}, '
               '"config": {"configurable": {"max_new_tokens": ' + "9" * 5000 + "}}}").encode()


def test_depth_counts_brackets_outside_strings_only():
    assert json_depth(b'{"a": [1, {"b": 2}]}') == 3
    assert json_depth(b'{"text": "[[[[{{{{ not nesting \\" ]]"}') == 1
    assert json_depth(b"42") == 0


@pytest.mark.parametrize("body, says", [
    (DEEP, f"deeper than {MAX_JSON_DEPTH} levels"),
    (HUGE_NUMBER, "a number in the request body is too long"),
    (b'{"input": ', "not valid JSON"),
    (b'{"a": "\xff"}', "not UTF-8"),
])
def test_a_body_that_cannot_be_taken_as_json_names_why(body, says):
    with pytest.raises(BadJSON, match=says):
        parse_json_body(body)


def test_ordinary_bodies_parse_as_before():
    assert parse_json_body(b"") is None
    assert parse_json_body(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}


@pytest.fixture(scope="module")
def client_and_keys():
    from keel.core.configuration import Configuration

    return make_app(cfg=Configuration(rate_limit_burst=10_000, auth_failure_limit=0))


@pytest.mark.parametrize("route", [*ROUTES, "/chat/batch", "/ingest"])
@pytest.mark.parametrize("body, says", [(DEEP, "deeper than"), (HUGE_NUMBER, "too long")])
def test_every_gated_route_answers_hostile_json_with_a_400(client_and_keys, route, body, says):
    client, keys = client_and_keys
    response = client.post(route, content=body, headers={**bearer(keys["alice"]), "Content-Type": "application/json"})
    assert response.status_code == 400, (route, response.status_code, response.text[:200])
    assert says in response.json()["detail"]


def test_the_app_still_answers_after_hostile_bodies(client_and_keys):
    client, keys = client_and_keys
    assert client.post("/chat/invoke", json=ask(), headers=bearer(keys["alice"])).status_code == 200


def test_a_review_edit_that_is_not_json_says_so(served):  # noqa: F811
    client, keys, _ = served
    response = client.post("/review/0123456789abcdef/edit", content=b'{"text": ', headers={
        **bearer(keys["rita"]), "Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("the request body is not valid JSON")
    deep = client.post("/review/0123456789abcdef/edit", content=DEEP, headers={
        **bearer(keys["rita"]), "Content-Type": "application/json"})
    assert deep.status_code in (400, 422), deep.text[:200]


# --- what a browser is told: sign-in schemes one per header, tool pages kept out of frames ---------

def test_a_401_names_each_scheme_in_a_header_of_its_own(client_and_keys):
    client, _ = client_and_keys
    response = client.get("/chat/playground/")
    assert response.status_code == 401
    assert response.headers.get_list("www-authenticate") == ['Bearer realm="keel"', 'Basic realm="keel"']


@pytest.mark.parametrize("path", ["/chat/playground/", "/docs"])
def test_the_playground_and_the_api_docs_carry_a_policy_and_frame_protection(client_and_keys, path):
    client, keys = client_and_keys
    response = client.get(path, headers=bearer(keys["alice"]))
    assert response.status_code == 200
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    answer = client.post("/chat/invoke", json=ask(), headers=bearer(keys["alice"]))
    assert "x-frame-options" not in answer.headers  # only the pages carry them
