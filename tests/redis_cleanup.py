"""Cleanup the Redis-backed tests share: a test index and every key under its prefix."""

from __future__ import annotations


def drop_index(redis_client, index_name: str) -> None:
    """Drop the index with its documents, then any key it left under ``index_name:`` (best effort)."""
    try:
        redis_client.ft(index_name).dropindex(delete_documents=True)
    except Exception:  # noqa: BLE001 - the test may have failed before the index existed
        pass
    for key in redis_client.scan_iter(match=f"{index_name}:*", count=1000):
        redis_client.delete(key)
