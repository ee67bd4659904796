"""What Keel installs: every package of the repository, all of it inside the one ``keel`` package.

Keel is embedded in other people's applications, where a bare ``graph`` or ``server`` package would
collide with theirs. The design card's folders stay at the top of the repository and pyproject.toml
maps them into ``keel``; a new folder that is not listed there would be missing from the wheel.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CARD_FOLDERS = ("graph", "nodes", "chains", "retrievers", "loaders")


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "keel").rglob("__init__.py")}
    for folder in CARD_FOLDERS:
        found |= {".".join(("keel", *p.parent.relative_to(ROOT).parts))
                  for p in (ROOT / folder).rglob("__init__.py")}
    return {name for name in found if "__pycache__" not in name}


def test_the_card_folders_are_installed_inside_keel():
    assert _setuptools()["package-dir"] == {f"keel.{folder}": folder for folder in CARD_FOLDERS}


def test_every_package_folder_is_listed_and_every_listed_package_exists():
    listed = set(_setuptools()["packages"])
    on_disk = _packages_on_disk()
    assert on_disk - listed == set(), "package folders missing from pyproject.toml's packages"
    assert listed - on_disk == set(), "pyproject.toml lists packages that do not exist"
    assert all(name == "keel" or name.startswith("keel.") for name in listed)


def test_the_command_and_the_studio_files_point_into_keel():
    import json

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["keel"] == "keel.cli.entry:main"  # warm answers before Keel is imported
    spec = json.loads((ROOT / "langgraph.json").read_text())
    for path in [*spec["graphs"].values(), spec["auth"]["path"]]:
        assert (ROOT / path.split(":")[0]).is_file(), path
