"""What kind of thing a question asks for, and whether an answer gives one (issue 35).

"Which plugin ...?", "What flag ...?", "Which version ...?" name the kind of the answer. A small
model that finds no such thing in its sources answers anyway with whatever its sources hold: a
key binding for the plugin, a program for the flag. Every word of that answer can be in its
source and the claim check passes; what is wrong is its kind. So a question that asks for one
thing of a named kind needs either a specific of that kind in the answer (a flag for a flag, a
version for a version, by form: ``claim_check.specifics``) or a cited note that speaks of that
kind ("plugin" for a plugin). The kinds are the kinds of specific people keep in notes, not any
vault's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memex.orchestrator.answer.claim_check import SpecificKind, specifics
from memex.orchestrator.answer.question_parts import question_parts

# Each kind a question may ask for, with the specifics that give one by their form (none:
# only a note that speaks of the kind will do).
KINDS: dict[str, frozenset[SpecificKind]] = {
    "flag": frozenset({"flag"}),
    "switch": frozenset({"flag"}),
    "version": frozenset({"version"}),
    "release": frozenset({"version"}),
    "key": frozenset({"key"}),
    "shortcut": frozenset({"key"}),
    "keystroke": frozenset({"key"}),
    "command": frozenset({"code"}),
    "path": frozenset({"path"}),
    "port": frozenset({"figure"}),
    "plugin": frozenset(),
    "extension": frozenset(),
    "package": frozenset(),
    "library": frozenset(),
    "gem": frozenset(),
    "module": frozenset(),
}
_ASKS = re.compile(
    rf"\b(?:what|which)\s+(?:[\w.+-]+\s+)??({'|'.join(KINDS)})(?:e?s)?\b", re.IGNORECASE
)


def asked_kind(question: str) -> str:
    """The kind of thing a one-part question asks for ("flag" for "What Node flag raises
    ...?"); "" when it names none or asks several things (each part is answered on its own
    terms, ``question_parts``)."""
    if len(question_parts(question)) > 1:
        return ""
    match = _ASKS.search(question)
    return match.group(1).lower() if match else ""


# What a part of a compound question asks for that only a specific of a form can give: "what
# error number ..." is not answered by a sentence with no figure in it, whatever words it shares
# with the part. Key bindings and commands are left out: a note writes them in too many forms
# ("`+`", "C-b").
_PART_FORMS: dict[str, frozenset[SpecificKind]] = {
    "flag": frozenset({"flag"}),
    "switch": frozenset({"flag"}),
    "version": frozenset({"version", "figure"}),
    "release": frozenset({"version", "figure"}),
    "port": frozenset({"figure"}),
    "number": frozenset({"figure"}),
    "year": frozenset({"figure"}),
}
_PART_ASKS = re.compile(
    rf"\b(?:what|which)\s+(?:[\w.+-]+\s+)??({'|'.join(_PART_FORMS)})(?:e?s)?\b", re.IGNORECASE
)
_COUNTS = re.compile(r"\bhow\s+(?:many|much)\b", re.IGNORECASE)


def wanted_forms(part: str) -> frozenset[SpecificKind]:
    """The forms of specific of which one answers ``part`` ("What error number do I get?":
    a figure); empty when its answer may take any form."""
    match = _PART_ASKS.search(part)
    if match:
        return _PART_FORMS[match.group(1).lower()]
    return frozenset({"figure"}) if _COUNTS.search(part) else frozenset()


def gives_kind(kind: str, claims: Sequence[str], cited_notes: Iterable[str]) -> bool:
    """Whether an answer (its ``claims``) gives a thing of ``kind``: a specific of that kind's
    form, or the kind named in a note it cites."""
    if any(KINDS[kind] & specific_kinds(claim) for claim in claims):
        return True
    spoken = re.compile(rf"\b{re.escape(kind)}(?:e?s)?\b", re.IGNORECASE)
    return any(spoken.search(text) for text in cited_notes)


def specific_kinds(claim: str) -> set[SpecificKind]:
    """The kinds of specific ``claim`` gives, a code span's own included: `git push
    --force-with-lease` is a command that gives a flag."""
    found: set[SpecificKind] = set()
    for kind, text in specifics(claim):
        found.add(kind)
        if kind == "code":
            found |= {inner for inner, _ in specifics(text)}
    return found
