"""API keys: who is asking comes from a credential, never from the request body.

A key is a random token shown once when the user is added (``keel users add``); only its SHA-256
is stored, in MongoDB, so every replica of the server sees the same users and a leaked database
holds no usable key. Clients send ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; a
browser (the playground) may send it as the password of HTTP Basic authentication.

Checking a key costs one SHA-256 and one lookup of that digest through a unique index, however
many users there are: keys are never compared one by one. A fast digest is the right one here:
a key holds 256 random bits, so no dictionary or brute force can reach one from its digest (slow
password hashes exist for guessable human passwords), and the database's comparison of digests
tells a timing observer nothing that leads back to a key. Guessing itself is bounded per client
address by the server (keel/server/limits.py ``FailedAttempts``). The stored format is unchanged from
the first release, so existing keys keep working; the index is created when the store is opened.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from keel.core.configuration import Configuration
from keel.stores.connections import get_mongo
from keel.stores.tag_filters import validate_tag_id

ROLES = ("user", "reviewer", "admin")
KEY_PREFIX = "keel_"
USERS_COLLECTION = "api_users"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the user id their documents and conversations are filed under."""

    name: str
    role: str


def hash_key(key: str) -> str:
    """What is stored of an API key: its SHA-256, so a leaked user file holds no usable key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A new API key: Keel's prefix and 32 random bytes, URL-safe."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def credential_from_headers(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries (header names lower-case), or None."""
    authorization = headers.get("authorization", "").strip()
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if scheme.lower() == "basic" and value.strip():
        try:
            _, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or None
    api_key = headers.get("x-api-key", "").strip()
    return api_key or None


class ApiKeys:
    """The users and their hashed keys, in one MongoDB collection (``_id`` is the user name).

    A verified key is remembered in the process for ``cache_ttl_s`` (5 s) to spare a database read
    per request; only valid keys are. The cache is per replica on purpose: it decides nothing
    another replica needs, and revoking a user clears the revoking process's cache only, so a
    revoked key stops working on every replica within ``cache_ttl_s``, the revocation delay."""

    def __init__(self, collection, cache_ttl_s: float = 5.0):
        self.collection = collection
        self.cache_ttl_s = cache_ttl_s
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: Configuration) -> ApiKeys:
        keys = cls(get_mongo(cfg)[cfg.mongodb_database][USERS_COLLECTION], cfg.auth_cache_ttl_s)
        keys.ensure_index()
        return keys

    def ensure_index(self) -> None:
        """The unique index ``verify`` finds a key's digest through (idempotent, cheap when it exists)."""
        self.collection.create_index("key_hash", unique=True)

    def add(self, name: str, role: str = "user") -> str:
        """A new key for ``name`` (shown once); a revoked user gets a fresh key, an active one is an error."""
        validate_tag_id("user name", name)
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        existing = self.collection.find_one({"_id": name})
        if existing and not existing.get("revoked"):
            raise ValueError(f"user {name!r} already exists; revoke it first to issue a new key")
        key = new_key()
        record = {"role": role, "key_hash": hash_key(key), "created_at": _now(), "revoked": False}
        if existing:
            self.collection.update_one({"_id": name}, {"$set": record})
        else:
            self.collection.insert_one({"_id": name, **record})
        return key

    def revoke(self, name: str) -> bool:
        result = self.collection.update_one({"_id": name, "revoked": False},
                                            {"$set": {"revoked": True, "revoked_at": _now()}})
        with self._lock:
            self._cache.clear()
        return bool(result.modified_count)

    def list(self) -> list[dict[str, Any]]:
        users = []
        for record in self.collection.find({}):
            users.append({"name": record["_id"], "role": record.get("role", "user"),
                          "created_at": record.get("created_at"), "revoked": bool(record.get("revoked"))})
        return sorted(users, key=lambda user: user["name"])

    def has_users(self) -> bool:
        return self.collection.find_one({"revoked": False}) is not None

    def verify(self, key: str | None) -> Principal | None:
        """The user a key belongs to, or None; a valid key is trusted for ``cache_ttl_s`` seconds."""
        if not key:
            return None
        digest = hash_key(key)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(digest)
        if cached and now - cached[0] < self.cache_ttl_s:
            return cached[1]
        record = self.collection.find_one({"key_hash": digest, "revoked": False})
        if record is None:  # wrong keys are not cached: guessing cannot fill the server's memory
            return None
        principal = Principal(record["_id"], record.get("role", "user"))
        with self._lock:
            self._cache[digest] = (now, principal)
        return principal


def _now() -> datetime:
    return datetime.now(UTC)
