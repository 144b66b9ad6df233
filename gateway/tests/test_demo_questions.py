"""The question files of the demo vault (`demo/eval/questions.jsonl`) and of the second vault
(`benchmarks/eval/second-vault.jsonl`, notes written apart from the demo's, in another style) are
sound: each parses, has the mix `memex eval` needs, every gold entry names a note or record of its
vault, and every fact of an answerable question is stated in one of its gold sources, so a right
answer can cite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from memex.cli.eval.matching import contains, ref_key
from memex.cli.eval.questions import parse_questions

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "demo" / "vault", ROOT / "demo" / "eval" / "questions.jsonl")
SECOND = (ROOT / "benchmarks/eval/second-vault", ROOT / "benchmarks/eval/second-vault.jsonl")


def _sources(vault: Path) -> dict[str, str]:
    """Text by gold key: each note under its title (frontmatter, else file name) and aliases,
    each record as ``collection:id``."""
    found: dict[str, str] = {}
    for path in vault.rglob("*.md"):
        text = path.read_text(encoding="utf-8")
        meta: dict[str, object] = {}
        if text.startswith("---\n"):
            block = text.split("\n---", 2)[0][4:]
            try:
                meta = yaml.safe_load(block) or {}
            except yaml.YAMLError:  # the vault has broken frontmatter on purpose; memex reads
                # such a block line by line, and so does this
                meta = dict(re.findall(r"^(title): (.+)$", block, re.MULTILINE))
        aliases = meta.get("aliases") or []
        names = [str(meta.get("title") or path.stem)]
        names += [str(a) for a in aliases] if isinstance(aliases, list) else [str(aliases)]
        for name in names:
            found[ref_key(name)] = text
    for path in (vault / "records").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                found[ref_key(f"{path.stem}:{record['id']}")] = json.dumps(
                    record, ensure_ascii=False
                )
    return found


@pytest.mark.parametrize(
    ("vault", "file", "size"), [(*DEMO, 40), (*SECOND, 30)], ids=["demo", "second"]
)
def test_the_question_file_is_sound(vault: Path, file: Path, size: int) -> None:
    questions = parse_questions(file.read_text(encoding="utf-8").splitlines(), str(file))
    assert len(questions) >= size
    assert sum(not q.answerable for q in questions) >= 8
    sources = _sources(vault)
    for q in questions:
        if not q.answerable:
            continue
        unknown = [g for g in q.gold if ref_key(g) not in sources]
        assert not unknown, f"{q.id}: gold {unknown} is no note or record of {vault.name}"
        texts = [sources[ref_key(g)] for g in q.gold]
        for fact in q.facts:
            assert any(contains(t, alt) for t in texts for alt in fact), (
                f"{q.id}: no gold source states {fact[0]!r}"
            )


TIL_VAULT = ROOT.parent / "shared" / "eval" / "til-vault"
TIL_QUESTIONS = ROOT / "benchmarks" / "eval" / "til.jsonl"


@pytest.mark.skipif(
    not TIL_VAULT.is_dir(), reason=f"the til vault is not beside the checkout ({TIL_VAULT})"
)
def test_the_til_question_file_is_sound() -> None:
    """Issue 35's questions about a real vault (1,871 notes nobody here wrote): gold notes named
    by their path in the vault, each fact in a gold note, at least 12 unanswerable."""
    questions = parse_questions(TIL_QUESTIONS.read_text(encoding="utf-8").splitlines(), "til")
    assert len(questions) >= 60
    assert sum(not q.answerable for q in questions) >= 12
    for q in questions:
        if not q.answerable:
            continue
        missing = [g for g in q.gold if not (TIL_VAULT / g).is_file()]
        assert not missing, f"{q.id}: gold {missing} is no note of the til vault"
        texts = [(TIL_VAULT / g).read_text(encoding="utf-8") for g in q.gold]
        for fact in q.facts:
            assert any(contains(t, alt) for t in texts for alt in fact), (
                f"{q.id}: no gold note states {fact[0]!r}"
            )
