"""The Weaviate schema of the store: four multi-tenant collections and how values map to them.

One Weaviate tenant per memex tenant, in every collection. Collection names carry a prefix
(``Memex`` by default) so several memex installs, or the tests, can share one server.

* ``<P>Note``: a note's metadata, its outgoing links (``link_keys`` for graph lookups, the full
  links as JSON), the records it stands for. No vector.
* ``<P>Chunk``: text, offsets, the BM25-indexed ``search_text``, entity ``mentions``, the chunk
  vector (self-provided, HNSW, cosine), and copies of the note fields that search filters on
  (``day``, ``tags``, ``sensitive``), so filters run inside the search (pre-filtering).
* ``<P>Record``: every record collection in one Weaviate collection (``collection`` property),
  fields as JSON, BM25-indexed ``text``, an optional vector.
* ``<P>Meta``: small per-tenant key/value pairs.

Object UUIDs are UUIDv5 of the memex ids, so a repeated write replaces rather than duplicates.
Exact-match properties use ``field`` tokenization; the keyword text uses ``word`` tokenization
(split on anything that is not a Unicode letter or digit, lower-cased) and no stopwords, which
is the keyword contract of ``store.base``. A chunk's ``search_text`` is stored already stemmed
(``keyword_terms.indexed_text``), as Weaviate does not stem; a record's ``text`` is not.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from uuid import UUID

from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    StopwordsPreset,
    Tokenization,
    VectorConfigCreate,
    VectorDistances,
)
from weaviate.collections.classes.config import InvertedIndexConfigCreate
from weaviate.util import generate_uuid5

from memex.shared.errors import InvalidArgument

VECTOR = "default"
"""The name of the one self-provided vector of chunks and records."""

_TENANT_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_PREFIX_OK = re.compile(r"^[A-Z][A-Za-z0-9]{0,30}$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def weaviate_tenant(tenant: str) -> str:
    """The Weaviate tenant name of a memex tenant: itself when Weaviate allows it, else a hash."""
    if _TENANT_OK.match(tenant) and not tenant.startswith("h-"):
        return tenant
    return "h-" + hashlib.sha256(tenant.encode()).hexdigest()[:40]


def day_number(date: str | None) -> int | None:
    """``YYYY-MM-DD`` as the integer ``YYYYMMDD`` (range filters on an int index), or None."""
    if date is None or date == "":
        return None
    match = _DATE.match(date)
    if not match:
        raise InvalidArgument(f"invalid date {date!r}: use YYYY-MM-DD")
    return int("".join(match.groups()))


def uuid_of(kind: str, key: str) -> UUID:
    """The deterministic object id of a memex id within one kind of object."""
    return UUID(generate_uuid5(key, kind))


def _exact(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """A property matched exactly in filters, not keyword-searched."""
    return Property(
        name=name,
        data_type=data_type,
        tokenization=Tokenization.FIELD,
        index_filterable=True,
        index_searchable=False,
    )


def _stored(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """A property only stored and returned, never indexed."""
    return Property(name=name, data_type=data_type, index_filterable=False, index_searchable=False)


def _keyword(name: str) -> Property:
    """The BM25-indexed text."""
    return Property(
        name=name,
        data_type=DataType.TEXT,
        tokenization=Tokenization.WORD,
        index_filterable=False,
        index_searchable=True,
    )


def _number(name: str, data_type: DataType, rangeable: bool = False) -> Property:
    return Property(
        name=name, data_type=data_type, index_filterable=True, index_range_filters=rangeable
    )


@dataclass(frozen=True)
class CollectionSpec:
    """What one collection is created with."""

    name: str
    properties: list[Property]
    vectors: bool


def collection_specs(prefix: str) -> dict[str, CollectionSpec]:
    """The four collections, keyed by kind (note, chunk, record, meta)."""
    if not _PREFIX_OK.match(prefix):
        raise InvalidArgument(
            f"invalid Weaviate collection prefix {prefix!r}: use a capital letter, then letters "
            "and digits"
        )
    note = [
        _exact("note_id"),
        _exact("path"),
        _stored("title"),
        _exact("date"),
        _stored("fingerprint"),
        _exact("tags", DataType.TEXT_ARRAY),
        _exact("keys", DataType.TEXT_ARRAY),
        _exact("record_keys", DataType.TEXT_ARRAY),
        _exact("link_keys", DataType.TEXT_ARRAY),
        _stored("links_json"),
        _stored("frontmatter_json"),
        _number("sensitive", DataType.BOOL),
        _stored("salience", DataType.NUMBER),
        _number("link_count", DataType.INT),
    ]
    chunk = [
        _exact("chunk_id"),
        _exact("note_id"),
        _stored("ordinal", DataType.INT),
        _stored("text"),
        _stored("heading"),
        _stored("start_offset", DataType.INT),
        _stored("end_offset", DataType.INT),
        _keyword("search_text"),
        _exact("mentions", DataType.TEXT_ARRAY),
        _number("mention_count", DataType.INT),
        _number("day", DataType.INT, rangeable=True),
        _exact("tags", DataType.TEXT_ARRAY),
        _number("sensitive", DataType.BOOL),
    ]
    record = [
        _exact("collection"),
        _exact("record_id"),
        _exact("ref"),
        _stored("fields_json"),
        _keyword("text"),
        _stored("date"),
        _number("day", DataType.INT, rangeable=True),
        _exact("tags", DataType.TEXT_ARRAY),
        _number("sensitive", DataType.BOOL),
        _exact("entity_refs", DataType.TEXT_ARRAY),
        _exact("source"),
    ]
    meta = [_exact("key"), _stored("value")]
    return {
        "note": CollectionSpec(f"{prefix}Note", note, vectors=False),
        "chunk": CollectionSpec(f"{prefix}Chunk", chunk, vectors=True),
        "record": CollectionSpec(f"{prefix}Record", record, vectors=True),
        "meta": CollectionSpec(f"{prefix}Meta", meta, vectors=False),
    }


def vector_config(spec: CollectionSpec) -> VectorConfigCreate:
    """Chunks and records: one self-provided vector in an HNSW index with cosine distance.

    Weaviate brute-forces a filtered search that matches fewer than ``flat_search_cutoff``
    objects, so narrow filters stay exact; the dynamic ef (at least 100) keeps unfiltered
    recall@10 well above the 0.95 the contract asks."""
    config: VectorConfigCreate = Configure.Vectors.self_provided(
        name=VECTOR,
        vector_index_config=Configure.VectorIndex.hnsw(
            distance_metric=VectorDistances.COSINE,
            ef_construction=128,
            max_connections=32,
        ),
    )
    return config


def inverted_index_config() -> InvertedIndexConfigCreate:
    """BM25 with the usual k1/b and no stopwords, as the embedded backend scores."""
    return Configure.inverted_index(bm25_k1=1.2, bm25_b=0.75, stopwords_preset=StopwordsPreset.NONE)
