"""docs/settings.md is rendered from the settings (keel/core/settings/reference.py), so it can never go
stale: it must equal the freshly rendered text and name every Configuration field. Regenerate it with
``python -m keel.core.settings.reference > docs/settings.md``."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields

from keel.core.configuration import Configuration
from keel.core.settings.reference import declaring_class, render
from tests.langgraph_json import PROJECT_ROOT

SETTINGS_MD = PROJECT_ROOT / "docs" / "settings.md"
REGENERATE = "docs/settings.md is stale: run python -m keel.core.settings.reference > docs/settings.md"


def test_docs_settings_md_is_the_rendered_reference():
    assert SETTINGS_MD.read_text(encoding="utf-8") == render(), REGENERATE


def test_every_configuration_field_is_in_the_reference():
    text = SETTINGS_MD.read_text(encoding="utf-8")
    missing = [item.name for item in fields(Configuration) if f"\n| `{item.name}` |" not in text]
    assert missing == [], f"{missing} not in docs/settings.md"


def test_each_field_is_listed_under_the_group_that_declares_it():
    text = render()
    for item in fields(Configuration):
        group = text.index(f"\n## {declaring_class(item.name).__name__}\n")
        row = text.index(f"\n| `{item.name}` |")
        assert text.rfind("\n## ", 0, row) == group, item.name


def test_the_reference_does_not_depend_on_the_environment(monkeypatch):
    """A default read from a variable is shown as it is with the variable unset."""
    monkeypatch.setenv("KEEL_CHAT_MODEL", "qwen2.5-coder-1.5b")
    monkeypatch.setenv("KEEL_REDIS_MAX_CONNECTIONS", "7")
    monkeypatch.setenv("KEEL_REVIEW_MODE", "always")
    assert render() == SETTINGS_MD.read_text(encoding="utf-8")
    assert os.environ["KEEL_CHAT_MODEL"] == "qwen2.5-coder-1.5b", "the variable is put back"


def test_the_module_prints_the_reference():
    printed = subprocess.run([sys.executable, "-m", "keel.core.settings.reference"], capture_output=True,
                             check=True, cwd=PROJECT_ROOT).stdout
    assert printed.decode("utf-8") == render()
