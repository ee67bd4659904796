"""What the LangServe playground reads, in a form it can use. It builds its settings form from
/chat/config_schema with JSON Forms, which cannot render a ``{"type": "null"}`` branch ("Unknown
type": a blank page), so an optional setting is shown as its own type without a default, while the
server still accepts a body that omits it or sends it as null. Once a setting is chosen the page
asks for the input schema at /chat/c/<settings>/input_schema. The page itself is checked in a real
browser in integration_tests/test_playground_browser.py."""

from __future__ import annotations

import typing

import pytest

from keel.server.served_graph import request_config_model
from keel.server.settings_policy import request_settings
from tests.serving_fakes import bearer
from tests.unit_tests.test_serving_app import ask, make_app

NULL = {"type": "null"}


def null_branches(schema, where="#") -> list[str]:
    """Where a schema (or any schema inside it) allows null."""
    found = []
    if isinstance(schema, dict):
        if schema == NULL or schema.get("type") == "null" or "null" in (schema.get("type") or []):
            found.append(where)
        for key, value in schema.items():
            found += null_branches(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += null_branches(value, f"{where}/{index}")
    return found


@pytest.fixture(scope="module")
def served():
    return make_app()


def test_the_config_schema_has_no_null_branch(served):
    client, keys = served
    response = client.get("/chat/config_schema", headers=bearer(keys["alice"]))
    assert response.status_code == 200, response.text
    assert null_branches(response.json()) == []
    page = client.get("/chat/playground/", headers=bearer(keys["alice"]))
    assert page.status_code == 200
    embedded = page.text.split("window.CONFIG_SCHEMA = ", 1)[1].split(";\n", 1)[0]
    assert '"type": "null"' not in embedded and "KeelRequestSettings" in embedded


def test_the_input_schema_answers_where_the_playground_asks_once_a_setting_is_chosen(served):
    client, keys = served
    plain = client.get("/chat/input_schema", headers=bearer(keys["alice"]))
    chosen = client.get("/chat/c/N4IgLgngDgpiBcIAOAbAlgZ2QMw/input_schema", headers=bearer(keys["alice"]))
    assert plain.status_code == chosen.status_code == 200 and chosen.json() == plain.json()
    assert client.get("/chat/c/N4IgLgngDgpiBcIAOAbAlgZ2QMw/input_schema").status_code == 401
    # only the schema: settings in the URL still reach no run
    for route in ("invoke", "stream", "stream_log", "batch"):
        assert client.post(f"/chat/c/N4IgLgngDgpiBcIAOAbAlgZ2QMw/{route}", json=ask(),
                           headers=bearer(keys["alice"])).status_code == 404, route


def test_the_config_schema_shows_each_request_settings_type_and_documentation(served):
    client, keys = served
    schema = client.get("/chat/config_schema", headers=bearer(keys["alice"])).json()
    settings = schema["$defs"][schema["properties"]["configurable"]["$ref"].rsplit("/", 1)[-1]]["properties"]
    assert set(settings) == set(request_settings())
    for name, (item, _hint) in request_settings().items():
        shown = settings[name]
        assert "default" not in shown, name  # a setting left out keeps the server's value
        if item.metadata.get("doc"):
            assert shown["description"] == item.metadata["doc"], name
    assert settings["max_new_tokens"]["type"] == "integer"
    assert settings["thread_id"]["type"] == "string"
    assert settings["enforce_language_match"]["type"] == "boolean"
    assert settings["doc_ids"] == {**settings["doc_ids"], "type": "array", "items": {"type": "string"}}
    for name in ("grounding_mode", "answer_format"):
        hint = request_settings()[name][1]
        choices = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        literal = choices[0] if len(choices) == 1 else hint
        assert settings[name]["enum"] == list(typing.get_args(literal)), name


def test_bodies_validate_as_before_without_settings_with_nulls_and_not_with_wrong_types():
    model = request_config_model()
    assert model.model_validate({}).configurable is None
    assert model.model_validate({"configurable": None}).configurable is None
    nulls = model.model_validate({"configurable": {"max_new_tokens": None, "grounding_mode": None}})
    assert nulls.configurable.max_new_tokens is None and nulls.configurable.grounding_mode is None
    with pytest.raises(ValueError):
        model.model_validate({"configurable": {"max_new_tokens": "many"}})
    with pytest.raises(ValueError):
        model.model_validate({"configurable": {"grounding_mode": "wild"}})


def test_the_server_answers_requests_that_omit_settings_or_send_them_as_null(served):
    client, keys = served
    for body in (ask(), ask(grounding_mode=None, max_new_tokens=None), ask(grounding_mode="strict")):
        response = client.post("/chat/invoke", json=body, headers=bearer(keys["alice"]))
        assert response.status_code == 200, (body, response.text)
        assert "Mara Holt" in response.json()["output"]["answer"]
    wrong = client.post("/chat/invoke", json=ask(max_new_tokens="many"), headers=bearer(keys["alice"]))
    assert wrong.status_code in (400, 422), wrong.text
