"""Citation policing (SPEC B2, B10): grounding, support grading, lenient parsing.

A citation must name an item the model was shown (by episode id, item id or reference); any other
is dropped. Its quote is then checked against the cited item's text with whitespace squashed and
case folded: "verbatim" on screen means that exact quote exists in that exact item.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memex.orchestrator.answer.lexical import squash
from memex.orchestrator.memory.items import Citation, GroundingReport, ShownItem, Support, note_path

_FENCE = re.compile(r"```[a-zA-Z]*")
_KEY_FIELDS = ("episode", "episode_id", "ref", "id", "item_id", "source", "citation")


def parse_citations(text: str) -> list[dict[str, Any]]:
    """The citation objects in the text after the marker; tolerant of code fences and trailing
    prose. Anything malformed yields no citations rather than an error."""
    cleaned = _FENCE.sub("", text)
    start = cleaned.find("[")
    if start < 0:
        return []
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(cleaned[start:])
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [entry for entry in value if isinstance(entry, dict)]


def grade(claimed: str, quote: str, source_text: str) -> Support:
    """The support-grading table of SPEC B10."""
    if claimed == "inference":
        return "inference"
    found = bool(quote.strip()) and squash(quote) in squash(source_text)
    return "verbatim" if found else "paraphrase"


def _lookup(shown: Iterable[ShownItem]) -> dict[str, list[ShownItem]]:
    """Shown items by every name a citation may use. An episode id names every chunk of its
    note, so a key may hold several items."""
    table: dict[str, list[ShownItem]] = {}
    for item in shown:
        keys = {item.item_id, item.ref, item.ref.strip("[]")}
        if item.episode_id:
            keys.add(item.episode_id)
        for key in keys:
            table.setdefault(key.strip().casefold(), []).append(item)
    return table


def _holding(items: Sequence[ShownItem], quote: str) -> ShownItem:
    """Of the items a citation may mean, the one whose text holds its quote (else the first):
    a quote from a note's third section is graded against that section, not the first."""
    if quote.strip():
        wanted = squash(quote)
        for item in items:
            if wanted in squash(item.text):
                return item
    return items[0]


def _key(entry: Mapping[str, Any]) -> str:
    for name in _KEY_FIELDS:
        value = entry.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def police(
    entries: Sequence[Mapping[str, Any]], shown: Sequence[ShownItem]
) -> tuple[list[Citation], GroundingReport]:
    """Keeps only grounded citations, re-grades their support, and reports what was dropped."""
    table = _lookup(shown)
    kept: list[Citation] = []
    dropped: list[str] = []
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        key = _key(entry)
        candidates = table.get(key.casefold()) or table.get(key.strip("[]").casefold())
        if not candidates:
            dropped.append(key or json.dumps(dict(entry))[:80])
            continue
        quote = entry.get("quote") if isinstance(entry.get("quote"), str) else ""
        item = _holding(candidates, str(quote))
        claimed = str(entry.get("support") or "paraphrase").strip().lower()
        citation = Citation(
            ref=item.ref,
            item_id=item.item_id,
            episode_id=item.episode_id,
            quote=str(quote),
            support=grade(claimed, str(quote), item.text),
            path=note_path(item),
        )
        if (citation.item_id, squash(citation.quote)) not in seen:
            seen.add((citation.item_id, squash(citation.quote)))
            kept.append(citation)
    return kept, GroundingReport(
        cited=len(entries), grounded=len(entries) - len(dropped), dropped=tuple(dropped)
    )
