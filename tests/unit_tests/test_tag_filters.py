"""Tag escaping and validation (keel/stores/tag_filters.py), no Redis needed: a user id, document id or file name
can never widen a RediSearch filter. The same filters against the real store are in
integration_tests/test_vector_store.py."""

from __future__ import annotations

import pytest

from keel.stores.tag_filters import escape_tag, tag_in, validate_tag_id


def test_escape_tag_escapes_ascii_punctuation_and_spaces_only():
    assert escape_tag("a|b") == r"a\|b"
    assert escape_tag("x}") == r"x\}"
    assert escape_tag("*") == r"\*"
    assert escape_tag("it's a-b.c") == r"it\'s\ a\-b\.c"
    assert escape_tag("user_42") == "user_42"
    assert escape_tag("日本 語") == r"日本\ 語"  # escaping a multi-byte character would match nothing


@pytest.mark.parametrize("bad", ["", " alice", "alice ", "a\nb", "a\x00b", "a\x7fb", None, 42])
def test_invalid_ids_are_rejected_with_the_field_name(bad):
    with pytest.raises(ValueError, match="user_id"):
        validate_tag_id("user_id", bad)


def test_an_empty_tag_list_is_an_error_not_a_wildcard():
    with pytest.raises(ValueError, match="match everything"):
        tag_in("doc_id", [])
