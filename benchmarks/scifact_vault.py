"""SciFact for `memex eval`: the corpus as a vault, and the question file that points into it.

    python benchmarks/scifact_vault.py                       # the vault, in the cache
    python benchmarks/scifact_vault.py --sample 500          # gold documents + 500 others
    python benchmarks/scifact_vault.py --questions benchmarks/eval/scifact-train.jsonl

The BEIR data (``../shared/eval/scifact-train`` beside the checkout) is never copied into the
repository. The vault goes outside it (default ``~/.cache/memex/eval/scifact-vault``): one note per
abstract, file ``<doc id>.md`` with frontmatter ``title: '<doc id>'`` (so an answer cites it as
``[[<doc id>]]`` and gold doc ids match citations) and the paper's title as the first heading.
The question file holds query ids and gold doc ids only; `memex eval` reads the claims from
``queries.jsonl`` at run time. Questions are every ``--every``-th query with a qrel, in id order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from memex.retrieval.bench.beir import Beir, load, safe_name
from memex.shared.settings import default_cache_dir
from memex.testing import SHARED_DATA

DATA = SHARED_DATA / "eval" / "scifact-train"
DATE = "2024-01-01"  # one date for every note, so recency ranks none above another


def question_ids(data: Beir, every: int) -> list[str]:
    """Every ``every``-th query that has a relevant document, by numeric id (reproducible)."""
    ids = sorted(data.qrels, key=lambda q: (len(q), q))  # numeric order for digit ids
    return [q for q in ids[::every] if q in data.queries]


def questions(data: Beir, every: int) -> list[dict[str, object]]:
    """Question-file lines: query id and gold doc ids; no claim text, no facts."""
    return [
        {
            "id": f"scifact-{qid}",
            "query_id": qid,
            "gold": sorted(data.qrels[qid], key=lambda d: (len(d), d)),
            "answerable": True,
        }
        for qid in question_ids(data, every)
    ]


def note(doc_id: str, title: str, text: str) -> str:
    """One abstract as a note titled by its doc id."""
    front = yaml.safe_dump({"title": doc_id, "date": DATE, "tags": ["scifact"]}, width=10_000)
    heading = f"# {title}\n\n" if title else ""
    return f"---\n{front}---\n{heading}{text}\n"


def chosen_docs(data: Beir, sample: int, every: int) -> list[str]:
    """All documents, or the question file's gold documents plus the first ``sample`` others."""
    if not sample:
        return list(data.corpus)
    gold = {d for q in question_ids(data, every) for d in data.qrels[q] if d in data.corpus}
    others = [d for d in data.corpus if d not in gold][:sample]
    return sorted(gold, key=lambda d: (len(d), d)) + others


def write_vault(data: Beir, vault: Path, ids: list[str]) -> int:
    """Writes (or leaves unchanged, so re-indexing is incremental) one note per document;
    returns how many files were written."""
    vault.mkdir(parents=True, exist_ok=True)
    written = 0
    for doc_id in ids:
        title, text = data.corpus[doc_id]
        path = vault / f"{safe_name(doc_id)}.md"
        content = note(doc_id, title, text)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the BEIR folder")
    parser.add_argument("--split", default="train")
    parser.add_argument(
        "--out", type=Path, default=None, help="vault folder (default: in the memex cache)"
    )
    parser.add_argument(
        "--sample", type=int, default=0, help="only the gold documents plus N others (0: all)"
    )
    parser.add_argument("--every", type=int, default=16, help="question every N-th query")
    parser.add_argument(
        "--questions", type=Path, default=None, help="write the question file here instead"
    )
    args = parser.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"skipped: {args.data} is missing (the reference data beside the checkout)")
        return 0
    data = load(args.data, args.split)
    if args.questions:
        lines = questions(data, args.every)
        args.questions.parent.mkdir(parents=True, exist_ok=True)
        args.questions.write_text("".join(json.dumps(q) + "\n" for q in lines), encoding="utf-8")
        print(f"{len(lines)} questions -> {args.questions}")
        return 0
    vault = args.out or default_cache_dir() / "eval" / "scifact-vault"
    ids = chosen_docs(data, args.sample, args.every)
    written = write_vault(data, vault, ids)
    print(f"{len(ids)} notes in {vault} ({written} written); next: memex index {vault}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
