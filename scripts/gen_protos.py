"""Generates the Python stubs (messages, gRPC, typed .pyi) for every .proto under protos/.

The output is committed beside the .proto files; `--check` regenerates into a temporary folder and
fails if the committed output is stale. grpcio-tools and mypy-protobuf are pinned in uv.lock.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import grpc_tools

ROOT = Path(__file__).resolve().parent.parent / "protos"
GENERATED = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate(out: Path) -> list[Path]:
    """Runs protoc over every proto into ``out``; returns the generated files, relative to it."""
    protos = sorted(p.relative_to(ROOT) for p in ROOT.glob("memex/**/*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    bin_dir = Path(sys.executable).parent
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"--proto_path={ROOT}",
        f"--proto_path={well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *map(str, protos),
    ]
    subprocess.run(command, check=True)
    for package in {p.parent for p in protos}:
        (out / package / "__init__.py").touch()
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())


def committed() -> list[Path]:
    """The generated files currently in the tree."""
    return sorted(
        p.relative_to(ROOT)
        for p in ROOT.rglob("*")
        if p.is_file() and (p.name.endswith(GENERATED) or p.name == "__init__.py")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed stubs are stale"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        if args.check:
            stale = [
                p
                for p in fresh
                if not (ROOT / p).exists()
                or not filecmp.cmp(Path(tmp) / p, ROOT / p, shallow=False)
            ]
            stale += [p for p in committed() if p not in fresh]
            if stale:
                print(
                    "generated protos are stale; run `make protos`:", *map(str, stale), sep="\n  "
                )
                return 1
            print(f"generated protos are fresh ({len(fresh)} files)")
            return 0
        for path in committed():
            (ROOT / path).unlink()
        for path in fresh:
            (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / path, ROOT / path)
        print(f"generated {len(fresh)} files under {ROOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
