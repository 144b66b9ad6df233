"""BEIR folders and the ranking metrics the retrieval benchmark reports (nDCG@10, Recall@100)."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass
class Beir:
    """A BEIR dataset: corpus {id: (title, text)}, queries {id: text}, qrels {qid: {docid: rel}}."""

    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(folder: Path, split: str) -> Beir:
    """Reads corpus.jsonl, queries.jsonl and qrels/<split>.tsv; keeps queries that have qrels."""
    corpus = {}
    with (folder / "corpus.jsonl").open() as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            score = int(row["score"])
            if score > 0:
                qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = score
    queries = {}
    with (folder / "queries.jsonl").open() as handle:
        for line in handle:
            query = json.loads(line)
            if str(query["_id"]) in qrels:
                queries[str(query["_id"])] = query["text"]
    return Beir(corpus, queries, qrels)


def safe_name(doc_id: str) -> str:
    """A file name for a document id (ids are usually digits; anything else is escaped)."""
    return "".join(c if c.isalnum() or c in "-_" else f"%{ord(c):02x}" for c in doc_id)


def write_vault(data: Beir, vault: Path, ids: list[str] | None = None) -> dict[str, str]:
    """One note per document (title in frontmatter, one fixed date so recency is neutral);
    unchanged files are left alone so re-indexing is incremental. Returns {file stem: doc id}."""
    vault.mkdir(parents=True, exist_ok=True)
    stems = {}
    for doc_id in ids if ids is not None else list(data.corpus):
        title, text = data.corpus[doc_id]
        stem = safe_name(doc_id)
        stems[stem] = doc_id
        front = yaml.safe_dump({"title": title or doc_id, "date": "2024-01-01"}, width=10_000)
        content = f"---\n{front}---\n{text}\n"
        path = vault / f"{stem}.md"
        if not path.exists() or path.read_text() != content:
            path.write_text(content)
    return stems


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains ``rel`` (BEIR/pytrec_eval convention: gain = rel)."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    """Share of the relevant documents found in the top k."""
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def dedupe(doc_ids: list[str]) -> list[str]:
    """Document ranking from a chunk ranking: each document at its best chunk's place."""
    return list(dict.fromkeys(doc_ids))


def subset(data: Beir, queries: int, docs: int) -> Beir:
    """A deterministic smaller benchmark: ``queries`` queries spread evenly over the sorted
    query ids, and a corpus of every document they judge relevant plus distractors (documents
    in sha256-of-id order) up to ``docs`` documents. Scores on it are higher than on the full
    corpus (fewer distractors); it is for comparing settings when the full run is too slow."""
    qids = sorted(data.queries)
    step = max(1, len(qids) // max(1, queries))
    kept = qids[::step][:queries]
    relevant = {d for q in kept for d in data.qrels[q]}
    others = sorted(
        (d for d in data.corpus if d not in relevant),
        key=lambda d: hashlib.sha256(d.encode()).hexdigest(),
    )
    ids = sorted(relevant) + others[: max(0, docs - len(relevant))]
    return Beir(
        corpus={d: data.corpus[d] for d in ids},
        queries={q: data.queries[q] for q in kept},
        qrels={q: data.qrels[q] for q in kept},
    )
