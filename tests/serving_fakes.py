"""Fakes for the multi-user server's tests: an in-memory stand-in for the few pymongo collection
calls the key store and the thread owners use, and a helper that builds an app with users."""

from __future__ import annotations

import copy
import threading
from types import SimpleNamespace

from pymongo.errors import DuplicateKeyError


class InMemoryCollection:
    """insert_one / find_one / find (sort, limit) / update_one with equality filters and ``$set``, like pymongo."""

    def __init__(self):
        self.records: dict[object, dict] = {}
        self._lock = threading.Lock()

    def _matches(self, record: dict, query: dict) -> bool:
        return all(record.get(key) == value for key, value in query.items())

    def insert_one(self, document: dict):
        with self._lock:
            if document["_id"] in self.records:
                raise DuplicateKeyError(f"duplicate _id {document['_id']!r}")
            self.records[document["_id"]] = copy.deepcopy(document)
        return SimpleNamespace(inserted_id=document["_id"])

    def find_one(self, query: dict):
        with self._lock:
            found = next((r for r in self.records.values() if self._matches(r, query)), None)
            return copy.deepcopy(found)

    def find(self, query: dict, sort: list[tuple[str, int]] | None = None, limit: int = 0):
        with self._lock:
            found = [copy.deepcopy(r) for r in self.records.values() if self._matches(r, query)]
        for key, direction in reversed(sort or []):  # pymongo's sort=[(key, 1 | -1), ...]; stable
            found.sort(key=lambda record: record.get(key), reverse=direction < 0)
        return found[:limit] if limit else found

    def create_index(self, key: str, unique: bool = False, name: str | None = None):
        self.indexes = {**getattr(self, "indexes", {}), name or f"{key}_1": {"key": key, "unique": unique}}
        return name or f"{key}_1"

    def update_one(self, query: dict, update: dict):
        with self._lock:
            found = next((r for r in self.records.values() if self._matches(r, query)), None)
            if found is not None:
                found.update(copy.deepcopy(update["$set"]))
            return SimpleNamespace(modified_count=int(found is not None), matched_count=int(found is not None))


def keys_and_owners(users=("alice", "mallory"), cache_ttl_s: float = 5.0):
    """An in-memory key store with ``users`` added, their keys, and an in-memory owner registry."""
    from keel.server.auth import ApiKeys
    from keel.server.ownership import ThreadOwners

    api_keys = ApiKeys(InMemoryCollection(), cache_ttl_s=cache_ttl_s)
    keys = {name: api_keys.add(name) for name in users}
    return api_keys, keys, ThreadOwners(InMemoryCollection())


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
