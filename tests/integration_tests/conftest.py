"""Every test in this folder runs on the real parts, so each is marked ``real`` here rather than by hand:
``pytest -m "not real"`` then leaves exactly the fast set in unit_tests/."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # A conftest hook sees every collected item, not only this folder's, hence the path check.
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.real)
