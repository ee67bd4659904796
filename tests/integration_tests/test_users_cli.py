"""`keel users add|list|revoke` on the embedded Mongo-wire server, and `keel serve`'s refusal to
listen publicly without authentication."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.real


def keel(*args: str, home) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keel.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "KEEL_HOME": str(home)}, timeout=300)


def test_users_are_added_listed_and_revoked(keel_home, keel_config, mongodb_uri):
    from keel.server.auth import ApiKeys

    name = f"cli-{uuid.uuid4().hex[:6]}"
    added = keel("users", "add", name, "--role", "admin", "--json", home=keel_home)
    assert added.returncode == 0, added.stderr
    key = json.loads(added.stdout)["api_key"]
    keys = ApiKeys.from_config(keel_config)
    assert keys.verify(key).name == name and keys.verify(key).role == "admin"
    again = keel("users", "add", name, home=keel_home)
    assert again.returncode == 1 and "already exists" in again.stderr
    listed = json.loads(keel("users", "list", "--json", home=keel_home).stdout)["users"]
    mine = next(user for user in listed if user["name"] == name)
    assert mine["role"] == "admin" and not mine["revoked"] and key not in json.dumps(listed)
    assert keel("users", "revoke", name, home=keel_home).returncode == 0
    assert ApiKeys.from_config(keel_config).verify(key) is None
    assert keel("users", "revoke", name, home=keel_home).returncode == 1


def test_serve_without_auth_refuses_a_public_address(keel_home):
    refused = keel("serve", "--no-auth", "--host", "0.0.0.0", "--port", "0", home=keel_home)
    assert refused.returncode == 1 and "without authentication" in refused.stderr


def test_keys_are_found_through_a_unique_index_and_keys_stored_before_it_still_work(keel_config, mongodb_uri):
    from datetime import datetime, timezone

    from pymongo.errors import DuplicateKeyError

    from keel.server.auth import USERS_COLLECTION, ApiKeys, hash_key, new_key
    from keel.stores.connections import get_mongo

    collection = get_mongo(keel_config)[keel_config.mongodb_database][USERS_COLLECTION]
    name, key = f"early-{uuid.uuid4().hex[:6]}", new_key()
    collection.insert_one({"_id": name, "role": "user", "key_hash": hash_key(key),  # as the first release stored it
                           "created_at": datetime.now(timezone.utc), "revoked": False})
    keys = ApiKeys.from_config(keel_config)
    on_digest = [index for index in collection.index_information().values() if index["key"] == [("key_hash", 1)]]
    assert len(on_digest) == 1 and on_digest[0].get("unique")  # (nx-27017 names it its own way)
    assert keys.verify(key).name == name
    with pytest.raises(DuplicateKeyError):  # one digest, one user
        collection.insert_one({"_id": f"{name}-copy", "key_hash": hash_key(key), "revoked": False})
    ApiKeys.from_config(keel_config)  # opening the store again keeps the index as it is
