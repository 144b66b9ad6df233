"""The embedding catalogue: settings it decides, the Makefile's pins, and jar verification."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from memex.embedding.catalogue import BGE_QUERY_INSTRUCTION, CATALOGUE, DEFAULT_MODEL, Jar, lookup
from memex.embedding.config import EmbeddingSettings
from memex.embedding.prepare import prepare, verify_jar
from memex.shared.errors import FailedPrecondition

ROOT = Path(__file__).parents[3]


def test_the_model_setting_brings_its_pooling_prefixes_and_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMEX_EMBEDDING_MODEL", "bge-small-en-v1.5-q")
    settings = EmbeddingSettings()
    assert settings.pooling == "cls"
    assert settings.query_prefix == BGE_QUERY_INSTRUCTION and settings.document_prefix == ""
    assert settings.max_tokens == 256
    assert settings.model_dir == lookup("bge-small-en-v1.5-q").path()


def test_explicit_settings_override_the_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_EMBEDDING_MODEL", "bge-small-en-v1.5")
    monkeypatch.setenv("MEMEX_EMBEDDING_QUERY_PREFIX", "query: ")
    monkeypatch.setenv("MEMEX_EMBEDDING_MAX_TOKENS", "512")
    settings = EmbeddingSettings()
    assert (settings.query_prefix, settings.max_tokens, settings.pooling) == ("query: ", 512, "cls")


def test_the_default_is_a_catalogue_entry_and_minilm_keeps_its_settings() -> None:
    assert DEFAULT_MODEL in CATALOGUE
    minilm = EmbeddingSettings(model="all-MiniLM-L6-v2")
    assert (minilm.pooling, minilm.query_prefix, minilm.max_tokens) == ("mean", "", 256)


def test_an_unknown_model_lists_the_catalogue() -> None:
    with pytest.raises(ValidationError, match="the catalogue has: all-MiniLM-L6-v2"):
        EmbeddingSettings(model="bge-large")


def test_the_makefile_pins_match_the_catalogue() -> None:
    lines = (ROOT / "scripts" / "embedding-models.txt").read_text().splitlines()
    pins = {
        name: (coordinates, sha)
        for name, coordinates, sha in (line.split() for line in lines if line and line[0] != "#")
    }
    jars = {m.name: m.jar for m in CATALOGUE.values() if m.jar is not None}
    assert pins == {name: (jar.coordinates, jar.sha256) for name, jar in jars.items()}


def _fake_jar(tmp_path: Path) -> tuple[Jar, Path]:
    path = tmp_path / "m.jar"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m.onnx", b"not a model")
        archive.writestr("m-tokenizer.json", b"{}")
    jar = Jar("g", "a", "1", path.stat().st_size, "0" * 64, "m.onnx", "m-tokenizer.json")
    return jar, path


def test_a_jar_whose_sha256_differs_from_the_pin_is_refused(tmp_path: Path) -> None:
    jar, path = _fake_jar(tmp_path)
    with pytest.raises(FailedPrecondition, match=r"sha256 \w+, the pin says 0000"):
        verify_jar(jar, path)
    with pytest.raises(FailedPrecondition, match="bytes, the pin says 1"):
        verify_jar(Jar("g", "a", "1", 1, "0" * 64, "m", "t"), path)
    with pytest.raises(FailedPrecondition, match="mvn -q dependency:get -Dartifact=g:a:1"):
        verify_jar(jar, tmp_path / "missing.jar")


def test_prepare_refuses_a_tampered_jar_and_writes_nothing(tmp_path: Path) -> None:
    model = lookup("bge-small-en-v1.5-q")
    assert model.jar is not None
    repository = tmp_path / "m2"
    jar_path = model.jar.local_path(repository)
    jar_path.parent.mkdir(parents=True)
    jar_path.write_bytes(b"x" * model.jar.size)
    with pytest.raises(FailedPrecondition, match="the pin says"):
        prepare(model, repository, tmp_path / "models")
    assert not (tmp_path / "models").exists()


def _model_folder(tmp_path: Path, model_id: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "memex_embedding.json").write_text(f'{{"model_id": "{model_id}"}}')
    return folder


def test_a_model_folder_of_a_catalogue_model_brings_that_entrys_settings(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, "sentence-transformers/all-MiniLM-L6-v2")
    settings = EmbeddingSettings(model_dir=folder)
    assert (settings.model, settings.pooling, settings.query_prefix) == (
        "all-MiniLM-L6-v2",
        "mean",
        "",
    )


def test_a_model_folder_that_contradicts_the_model_setting_is_refused(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, "sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(ValidationError, match="holds all-MiniLM-L6-v2, but MEMEX_EMBEDDING_MODEL"):
        EmbeddingSettings(model="bge-small-en-v1.5", model_dir=folder)
