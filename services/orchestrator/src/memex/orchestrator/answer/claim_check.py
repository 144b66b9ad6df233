"""The claim check (issue 35): every specific an answer states must be in a source it cites.

A small model that has the right note in front of it still writes a version, a price, a flag or a
command that the note does not hold: a neighbouring procedure's, or one it made up. Grading
(``answer/grading.py``) weighs a claim's words; this check is stricter and as mechanical as SPEC
B10. The specifics of a sentence (numbers with their units, versions, dates, code spans, commands
and flags, identifiers, key combinations, paths, proper names) are found by their form, not by any
vocabulary, and each must occur, normalised, in what the model was shown of a source the answer
cites: its excerpt and its header. A sentence with a specific that no cited source holds is not
shown as fact; the reader drops it (``answer/check.py``).

Normalisation: case folded, whitespace squashed, Markdown's code marks and emphasis dropped,
figures read as ``lexical.terms`` reads them (``1,030`` is ``1030``, ``three`` is ``3``), a
date as the briefing speaks it (``2026-06-03`` is ``3 June 2026``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from memex.orchestrator.answer.lexical import is_number, squash, terms
from memex.orchestrator.memory.items import CheckedSpecific as Specific
from memex.shared.dates import MONTHS, WEEKDAYS

SpecificKind = Literal["code", "flag", "identifier", "key", "path", "version", "figure", "name"]


_CODE_SPAN = re.compile(r"`+([^`\n]+?)`+")
# The forms that mark a word as something a person types or a thing's exact name, whatever
# the vault: a flag (``--force-with-lease``, ``-n``), a path (``~/.vimrc``, ``/etc/hosts``),
# a key combination (``Ctrl-W``, ``<C-w>``, ``Cmd+Shift+P``), an identifier with an
# underscore, a dot or parentheses inside it, or inner capitals (``pg_size_pretty``,
# ``Array.prototype.flat``, ``useEffect()``), a version (``v1.2.3``, ``9.4``).
_FLAG = re.compile(r"(?<![\w/.-])--?[A-Za-z][\w-]*(?:=[^\s,;)]+)?")
_PATH = re.compile(r"(?<![\w.])(?:~|\.{1,2})?/[\w.~-]+(?:/[\w.~-]*)+|(?<![\w/])~/[\w.~-]+")
_KEY = re.compile(
    r"<[A-Za-z]-[^\s>]+>"
    r"|\b(?:ctrl|control|cmd|command|alt|option|opt|shift|meta|super|ctl)"
    r"(?:\s?[-+]\s?(?:ctrl|control|cmd|command|alt|option|opt|shift|meta|super"
    r"|[\w\[\]\\/;',.`=-](?!\w)))+",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(
    r"\b[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)+(?:\(\))?"  # a.b.c, A::B, a#b
    r"|\b[A-Za-z$][\w$]*_[\w$]*"  # snake_case
    r"|\b[a-z]+[A-Z][\w$]*"  # camelCase
    r"|\b[A-Z][a-z]+[A-Z][\w$]*"  # CamelCase
    r"|\b[A-Za-z_$][\w$]*\(\)",  # call()
)
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){1,3}(?![\w.]*\w)")
# A figure as one piece, a time or a score included ("2:04:37", "1,030.50", "40%").
_FIGURE = re.compile(r"(?<![\w.:])[$£€¥]?\d(?:[\d,.:]*\d)?(?:\s?%)?")
NUMBER_WORD = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty)\b",
    re.IGNORECASE,
)
_CAPITALISED = re.compile(r"(?<![\w'\u2019.-])[A-Z][\w'\u2019-]*")
# Where a capitalised word starts a sentence or a clause rather than naming something.
_CLAUSE_START = re.compile(r"(?:^|[.!?:;(\"“\n]|\s[-\u2013\u2014])\s*$")
_NOT_NAMES = frozenset({*MONTHS, *WEEKDAYS, "i", "i'm", "i've", "i'd", "i'll"})
_MARKUP = re.compile(r"[`*_]+")
_PROMPT = re.compile(r"^\s*[$>%#]\s+")  # a shell prompt opening a line of code
# How notes write the part of a command that a person fills in: <branch>, [file], {name}, ...
_PLACEHOLDER = re.compile(r"[<\[{].*[>\]}]|\.\.\.|\u2026")


def specifics(sentence: str) -> list[tuple[SpecificKind, str]]:
    """The specifics of ``sentence`` in order of kind, each once: code spans first (their
    contents are not searched again), then flags, paths, keys, identifiers, versions and
    figures, then proper names (capitalised words that do not open a sentence or clause)."""
    found: list[tuple[SpecificKind, str]] = []
    taken: list[tuple[int, int]] = []

    def add(kind: SpecificKind, match: re.Match[str], text: str | None = None) -> None:
        span = match.span()
        if any(lo < span[1] and span[0] < hi for lo, hi in taken):
            return
        taken.append(span)
        found.append((kind, (text if text is not None else match.group()).strip()))

    for match in _CODE_SPAN.finditer(sentence):
        if match.group(1).strip():
            add("code", match, match.group(1))
    for kind, pattern in (
        ("path", _PATH),
        ("key", _KEY),
        ("flag", _FLAG),
        ("identifier", _IDENTIFIER),
        ("version", _VERSION),
        ("figure", _FIGURE),
        ("figure", NUMBER_WORD),
    ):
        for match in pattern.finditer(sentence):
            add(kind, match)  # type: ignore[arg-type]
    for match in _CAPITALISED.finditer(sentence):
        word = match.group().rstrip("'\u2019-")
        if word.casefold().removesuffix("s") in _NOT_NAMES or _CLAUSE_START.search(
            sentence[: match.start()]
        ):
            continue
        add("name", match, word)
    return list(dict.fromkeys(found))


def normal(text: str) -> str:
    """``text`` as occurrence is checked: code marks and emphasis dropped, whitespace squashed,
    case folded."""
    return squash(_MARKUP.sub(" ", text).replace("\u2019", "'"))


@dataclass(frozen=True)
class Shown:
    """What the model was shown of one source, ready for occurrence checks."""

    ref: str
    text: str  # the excerpt, ``normal`` form: what a code specific must occur in
    terms: frozenset[str]  # the header's and the excerpt's: what figures and names are found in

    @classmethod
    def of(cls, ref: str, *texts: str, header: str = "") -> Shown:
        """The shown text of a source: its excerpt (and its plain rendering), and its header
        (title, date). The header holds a figure or a name, as the model reads them there; it
        holds no command: a small model that writes a note's file name as the command to type
        (`allow-edits-from-the-start`) has named the source, not read it."""
        joined = " \n ".join(texts)
        return cls(ref, normal(joined), frozenset(terms(f"{header}\n{joined}")))


def holds(kind: SpecificKind, text: str, shown: Shown) -> bool:
    """Whether ``shown`` holds the specific ``text``. Figures and names are compared as terms
    (``£1,030`` is ``1030``; ``Graham's`` is ``Graham``); everything a person types as written,
    normalised. A code span of three or more words may differ in one word that is not a figure
    or a flag: a placeholder filled in (``git checkout -b feature`` for ``<branch>``)."""
    if kind in ("figure", "name"):
        wanted = [t for t in terms(text) if kind == "name" or is_number(t)]
        return all(t in shown.terms for t in wanted)
    written = normal(text).strip(" .,;:")
    if not written:
        return True
    if _occurs(written, shown.text):
        return True
    if kind != "code":
        return False
    words = written.split()
    missing = [i for i, w in enumerate(words) if not _occurs(w, shown.text)]
    if len(words) < 3 or len(missing) != 1:
        return False
    # The one word the source does not hold must stand where the source writes a placeholder.
    pattern = r"\s+".join(
        r"(\S+)" if i == missing[0] else re.escape(word) for i, word in enumerate(words)
    )
    found = re.search(pattern, shown.text)
    return found is not None and _PLACEHOLDER.search(found.group(1)) is not None


def occurs_in(specific: str, text: str) -> bool:
    """Whether ``text`` writes ``specific``, both normalised."""
    written = normal(specific).strip(" .,;:")
    return bool(written) and _occurs(written, normal(text))


def _occurs(written: str, text: str) -> bool:
    """``written`` in ``text``, not as part of a longer word or figure."""
    pattern = rf"(?<![\w]){re.escape(written)}" if written[:1].isalnum() else re.escape(written)
    if written[-1:].isalnum():
        pattern += r"(?![\w])"
    return re.search(pattern, text) is not None


def verdicts(
    sentence: str, cited: Sequence[Shown], question: str = "", *, code: bool = False
) -> list[Specific]:
    """Each specific of ``sentence`` with the cited source that holds it, or unsupported; a
    line of a fenced code block (``code``) is one code specific as a whole. A specific the
    question itself writes (the error message it quotes, the name it asks about) is restated,
    not claimed."""
    asked_terms = frozenset(terms(question))
    asked_text = normal(question)
    found: list[tuple[SpecificKind, str]] = (
        [("code", _PROMPT.sub("", sentence).strip())] if code else specifics(sentence)
    )
    out = []
    for kind, text in found:
        if not text:
            continue
        if (kind == "name" and all(t in asked_terms for t in terms(text))) or (
            kind != "figure" and _occurs(normal(text).strip(" .,;:") or text, asked_text)
        ):
            out.append(Specific(text, kind, "restated"))
            continue
        holder = next((s for s in cited if holds(kind, text, s)), None)
        verdict = "supported" if holder else "unsupported"
        out.append(Specific(text, kind, verdict, holder.ref if holder else ""))
    return out


def unsupported(found: Iterable[Specific]) -> list[Specific]:
    """The specifics no cited source holds."""
    return [s for s in found if s.verdict == "unsupported"]
