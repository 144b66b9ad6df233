"""The plan hop's tools, schema and validation (SPEC B1).

The model sees only the question and this schema, never data. Each proposed step is validated;
invalid ones are dropped and counted, and an empty or unusable plan falls back to
``search_vault(question)``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

RECORD_COLLECTIONS = ("entities", "events", "inbox", "beliefs", "observations")
FILTER_OPS = ("eq", "ne", "lt", "lte", "gt", "gte", "contains", "in")
MAX_STEPS = 4

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "maxItems": MAX_STEPS,
            "items": {
                "type": "object",
                "properties": {
                    "tool": {
                        "type": "string",
                        "enum": ["search_vault", "query_records", "person_timeline", "list_inbox"],
                    },
                    "query": {"type": "string", "maxLength": 120},
                    "collection": {"type": "string", "enum": list(RECORD_COLLECTIONS)},
                    "entity_id": {"type": "string"},
                },
                "required": ["tool"],
            },
        }
    },
    "required": ["steps"],
}

PLAN_INSTRUCTIONS = f"""
You plan how to look up the answer to a question in a person's notes and records. You cannot see
the data; you only choose lookups. Tools:
- search_vault(query): search the notes; write a short search query.
- query_records(collection): read records; collection is one of {", ".join(RECORD_COLLECTIONS)}.
- person_timeline(entity_id): everything about one person or entity, by its id.
- list_inbox(): the pending inbox items.
Return JSON: {{"steps": [{{"tool": "search_vault", "query": "..."}}]}} with 1 to {MAX_STEPS} steps.
""".strip()


# Questions one search of the notes cannot serve: records and the inbox, a person's whole
# timeline. Anything else skips the plan hop, two questions at once included: the question's own
# search brief the note that answers as well or better than the plan's searches (all 29 of the
# til vault's answerable compound questions in the first three sources, against 27 with the
# logged plans; benchmarks/bench_parts_search.py), and the plan costs about 6 s on 2 cores
# before the first word.
_NEEDS_TOOLS = re.compile(
    r"\b(?:inbox|to-?dos?|tasks?|pending|overdue|due dates?|deadlines?|events?|calendar|"
    r"schedule|timeline|beliefs?|observations?|tracker|strava|bank|records?|everything about|"
    r"history with|list (?:all|every|my))\b",
    re.IGNORECASE,
)


def wants_plan(question: str) -> bool:
    """Whether a question earns the plan hop (``plan_hop=auto``)."""
    return bool(_NEEDS_TOOLS.search(question))


@dataclass(frozen=True)
class Step:
    """One validated retrieval step."""

    tool: str
    query: str = ""
    collection: str = ""
    entity_id: str = ""
    filters: tuple[tuple[str, str, object], ...] = field(default_factory=tuple)
    # A search_vault step may be held to notes dated in a window (YYYY-MM-DD, inclusive).
    since: str = ""
    until: str = ""


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    dropped: tuple[str, ...]  # why each invalid step was dropped
    fell_back: bool


def _validate(raw: Any) -> Step | str:
    if not isinstance(raw, dict):
        return "a step is not an object"
    tool = raw.get("tool")
    if tool == "search_vault":
        query = raw.get("query")
        if not isinstance(query, str) or not query.strip():
            return "search_vault without a query"
        return Step("search_vault", query=query.strip()[:500])
    if tool == "query_records":
        collection = raw.get("collection")
        if collection not in RECORD_COLLECTIONS:
            return f"query_records on {collection!r}, which is not allowlisted"
        return Step("query_records", collection=str(collection))
    if tool == "person_timeline":
        entity = raw.get("entity_id")
        if not isinstance(entity, str) or not entity.strip():
            return "person_timeline without an entity_id"
        return Step("person_timeline", entity_id=entity.strip())
    if tool == "list_inbox":
        return Step("list_inbox")
    return f"unknown tool {tool!r}"


def parse_plan(text: str, question: str) -> Plan:
    """Validates the model's plan; falls back to searching the question itself. Every plan gets
    the question's own search too: its lookups (records, a timeline, the inbox) add to what the
    notes say, and its searches are the model's words, which must not stand in for the
    person's. Asked about "'cannot load such file -- rexml/document'", the 1.5B model searched
    "ruby version", and the note on rexml was never briefed."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        value = None
    raw_steps = value.get("steps") if isinstance(value, dict) else None
    steps: list[Step] = []
    dropped: list[str] = []
    for raw in raw_steps if isinstance(raw_steps, list) else []:
        checked = _validate(raw)
        if isinstance(checked, str):
            dropped.append(checked)
        elif checked not in steps and len(steps) < MAX_STEPS:
            steps.append(checked)
    if not isinstance(raw_steps, list):
        dropped.append("the plan was not JSON with a steps list")
    search = Step("search_vault", query=question)
    if not steps:
        return Plan((search,), tuple(dropped), fell_back=True)
    if search not in steps:
        steps.insert(0, search)
    return Plan(tuple(steps), tuple(dropped), fell_back=False)
