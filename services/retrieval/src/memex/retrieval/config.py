"""Retrieval service settings (``MEMEX_RETRIEVAL_...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from memex.retrieval.fusion import Fusion
from memex.retrieval.ingest.documents import DOCUMENT_SUFFIXES, MAX_DOCUMENT_BYTES
from memex.retrieval.whisper_models import CATALOGUE, DEFAULT_WHISPER_MODEL
from memex.shared.settings import ServiceSettings, default_data_dir


def default_store_dir() -> Path:
    """Where the embedded store keeps its files."""
    return default_data_dir() / "retrieval"


class RetrievalSettings(ServiceSettings):
    """Everything the retrieval service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_RETRIEVAL_")

    port: int = Field(50052, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    embedding_addr: str = Field(
        "127.0.0.1:50051", description="Address of the embedding service (host:port)."
    )
    embedding_timeout_seconds: float = Field(
        600.0,
        gt=0,
        description="Deadline of one Embed call (a batch of chunks) to the embedding service.",
    )
    store: Literal["embedded", "weaviate"] = Field(
        "embedded", description="Storage backend: embedded (SQLite + usearch) or weaviate."
    )
    store_dir: Path = Field(
        default_factory=default_store_dir, description="Folder of the embedded store."
    )
    default_tenant: str = Field("default", description="Tenant used when a request names none.")
    default_k: int = Field(10, gt=0, le=1000, description="Items a search returns by default.")
    max_k: int = Field(200, gt=0, description="Most items one search may ask for.")
    channel_depth: int = Field(
        100, gt=0, description="Candidates each channel contributes to fusion."
    )
    # RRF's k and the keyword weight were tuned on BEIR scifact-train with 2-fold cross-validation
    # (benchmarks/bench_retrieval.py): both halves chose k=5, keyword 1.25 (k=60, 1.0: -0.012).
    # Convex min-max fusion beat RRF on BEIR scifact-train, held out by 2-fold cross-validation:
    # nDCG@10 0.7385 against 0.7286 (+0.0099, paired bootstrap 95% CI +0.0034..+0.0162); both
    # halves chose keyword weight 1.25 for it, the weight RRF was tuned to as well.
    fusion: Fusion = Field(
        "minmax",
        description="How channels are fused: rrf (weighted Reciprocal Rank Fusion), or convex "
        "fusion of per-channel normalised raw scores: minmax or zscore (docs/retrieval.md).",
    )
    rrf_k: float = Field(5.0, gt=0, description="Reciprocal Rank Fusion constant k.")
    vector_weight: float = Field(1.0, ge=0, description="Fusion weight of the vector channel.")
    keyword_weight: float = Field(
        1.25, ge=0, description="Fusion weight of the keyword channel (RRF or convex)."
    )
    graph_weight: float = Field(0.5, ge=0, description="Fusion weight of the graph channel.")
    beliefs_weight: float = Field(0.5, ge=0, description="Fusion weight of the beliefs channel.")
    observations_weight: float = Field(
        0.5, ge=0, description="Fusion weight of the observations channel."
    )
    rerank: Literal["off", "cross-encoder", "bi-encoder"] = Field(
        "off",
        description="Rerank the fused top rerank_depth with an ONNX model in rerank_model_dir: a "
        "cross-encoder (one logit per query/passage pair) or a sentence encoder used pointwise.",
    )
    rerank_model_dir: Path | None = Field(
        None, description="Folder with the rerank model's model.onnx and tokenizer.json."
    )
    rerank_depth: int = Field(
        30, gt=0, le=1000, description="Fused candidates the reranker rescores (at least k)."
    )
    rerank_weight: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of the model in the reranked score: 1 orders by the model alone, "
        "0 keeps the fused order (both min-max normalised over the candidates).",
    )
    rerank_max_tokens: int = Field(
        512, gt=8, description="Tokens per (query, passage) pair; the passage is cut first."
    )
    rerank_pooling: Literal["cls", "mean"] = Field(
        "cls", description="Pooling of a bi-encoder reranker's last hidden state."
    )
    rerank_query_prefix: str = Field(
        "", description="Text put before the query for a bi-encoder reranker (an instruction)."
    )
    rerank_threads: int = Field(
        0, ge=0, description="ONNX Runtime threads of the reranker; 0 lets it choose."
    )
    recency_half_life_days: float = Field(
        180.0, ge=0, description="Recency half-life; 0 turns the recency adjustment off."
    )
    recency_weight: float = Field(
        0.2, ge=0, le=1, description="How much recency can lower a fused score (0..1)."
    )
    salience_weight: float = Field(
        0.2, ge=0, le=1, description="How much salience moves a fused score (0..1)."
    )
    record_collections: list[str] = Field(
        default=["entities", "events", "inbox", "beliefs", "observations"],
        description="Allowlisted record collections (QueryRecords refuses any other).",
    )
    sensitive_tags: list[str] = Field(
        default=["sensitive", "private", "health"],
        description="Notes carrying any of these tags are sensitive.",
    )
    sensitive_folders: list[str] = Field(
        default=["private"], description="Notes under these vault folders are sensitive."
    )
    sensitive_collections: list[str] = Field(
        default=[], description="Every record of these collections is sensitive."
    )
    records_folder: str = Field(
        "records", description="Vault folder holding <collection>.jsonl record files."
    )
    include: list[str] = Field(
        default=["*.md", *(f"*{suffix}" for suffix in sorted(DOCUMENT_SUFFIXES))],
        description="fnmatch patterns of vault-relative paths to index (* crosses folders): "
        "Markdown notes, and PDFs, saved web pages, mail and voice memos, read as notes.",
    )
    exclude: list[str] = Field(
        default=[], description="fnmatch patterns of vault-relative paths never to index."
    )
    max_file_bytes: int = Field(
        2 * 1024 * 1024, gt=0, description="Larger notes are skipped as too big."
    )
    max_document_bytes: int = Field(
        MAX_DOCUMENT_BYTES,
        gt=0,
        description="Larger PDFs, web pages, mailboxes and voice memos are skipped as too big.",
    )
    whisper_model: str = Field(
        DEFAULT_WHISPER_MODEL,
        description=f"The Whisper model that transcribes voice memos: {', '.join(CATALOGUE)} "
        "(`make models` prepares it; docs/models.md).",
    )
    whisper_model_dir: Path | None = Field(
        None,
        description="The prepared Whisper model's folder (its model.bin); default: the "
        "catalogue's folder for whisper_model in memex's cache (a deployment mounts it).",
    )
    whisper_threads: int = Field(
        0, ge=0, description="CPU threads a transcription uses (0: CTranslate2's default)."
    )

    @field_validator("whisper_model")
    @classmethod
    def _known_whisper_model(cls, name: str) -> str:
        if name not in CATALOGUE:
            raise ValueError(f"unknown Whisper model {name!r}; the catalogue has {list(CATALOGUE)}")
        return name

    embed_batch: int = Field(32, gt=0, description="Chunks sent in one Embed call.")
    weaviate_host: str = Field(
        "127.0.0.1", description="Weaviate host (REST and gRPC), when store is weaviate."
    )
    weaviate_http_port: int = Field(8079, ge=1, le=65535, description="Weaviate REST port.")
    weaviate_grpc_port: int = Field(50059, ge=1, le=65535, description="Weaviate gRPC port.")
    weaviate_api_key: SecretStr | None = Field(
        None, description="API key of the Weaviate server (`memex up` generates and passes one)."
    )
    weaviate_collection_prefix: str = Field(
        "Memex", description="Prefix of memex's Weaviate collections (lets installs share one)."
    )
    weaviate_timeout_seconds: float = Field(
        60.0, gt=0, description="Timeout of one Weaviate query (writes get twice as long)."
    )
    weaviate_nodes: str = Field(
        "",
        description="The cluster's other Weaviate nodes, host:http_port:grpc_port separated by "
        "commas: the store fails over to them when its node is lost.",
    )
    weaviate_replication_factor: int = Field(
        1, ge=1, description="Copies of every collection (3 on a 3-node cluster)."
    )
    weaviate_read_consistency: Literal["ONE", "QUORUM", "ALL"] = Field(
        "QUORUM",
        description="Replicas that must answer a read (writes always need a QUORUM).",
    )
    weaviate_retry_seconds: float = Field(
        30.0,
        ge=0,
        description="How long a call keeps retrying on other nodes after a node is lost "
        "(with weaviate_nodes only).",
    )

    @model_validator(mode="after")
    def _rerank_needs_a_model(self) -> RetrievalSettings:
        if self.rerank != "off" and self.rerank_model_dir is None:
            raise ValueError(
                f"MEMEX_RETRIEVAL_RERANK={self.rerank} needs MEMEX_RETRIEVAL_RERANK_MODEL_DIR "
                "(a folder with model.onnx and tokenizer.json); or set MEMEX_RETRIEVAL_RERANK=off"
            )
        return self
