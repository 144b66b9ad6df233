"""Judging a read answer as a whole, for ask's abstention rules (``ask/stages.py``) and its
follow-up calls (``ask/asker.py``): whether it says anything the question did not (``informative``),
whether the notes it cites are about the question (``on_topic``, ``cited_notes``), how well its
best citation holds its claim (``strength``), and which parts of a compound question it leaves
out (``unaddressed_parts``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memex.orchestrator.answer.asked_kind import specific_kinds, wanted_forms
from memex.orchestrator.answer.claim_check import (
    occurs_in as _occurs_in,
)
from memex.orchestrator.answer.claim_check import specifics
from memex.orchestrator.answer.claims import says_more
from memex.orchestrator.answer.grading import RANK
from memex.orchestrator.answer.lexical import is_number, names, terms, topical
from memex.orchestrator.answer.question_parts import question_parts
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.answer.sources import Source

_YES_NO_QUESTION = re.compile(
    r"^\s*(?:is|are|was|were|am|do|does|did|have|has|had|can|could|will|would|should|shall)\b",
    re.IGNORECASE,
)


def informative(question: str, reading: Reading) -> bool:
    """Whether the answer says anything the question did not. "I studied at university [2]" to
    "What did I study at university?" only restates the question, whatever it cites; so does
    "My blood type is A", and so does "on the following days: [1], [2]", which points at
    sources instead of answering. A yes/no question may be answered by "Yes [1]", and a
    specific typed or counted is something said ("The one-character shortcut is `+`"); a
    capital letter alone is not ("A")."""
    if reading.lists_sources:
        return False
    if _YES_NO_QUESTION.match(question):
        return True
    return any(
        says_more(claim, question)
        or any(kind != "name" and not _occurs_in(text, question) for kind, text in specifics(claim))
        for claim in reading.claims
    )


def _adds(claim: str, question: str) -> bool:
    """Whether ``claim`` says more than ``question``: a word, or a specific the question does not
    write ("The one-character shortcut for force-pushing main is `+`" adds only the `+`)."""
    return says_more(claim, question) or any(
        not _occurs_in(text, question) for _, text in specifics(claim)
    )


def on_topic(question: str, reading: Reading, sources: Sequence[Source]) -> bool:
    """Whether the sources an answer cites share any content word with the question (titles
    included). An answer to "what car do I drive?" resting on a note about a deposit is a small
    model answering anyway, from whatever it was shown; it is not grounded in the notes. Common
    verbs do not count (``topical``): "paid" in a deposit note is not about contents insurance.
    A question that names something ("What rating did I give Station Eleven?") needs a cited
    source that mentions one of its names (``names``), or the other names the header gave it:
    "rating: 3" in another book's note is not about that book. A question that names a thing
    in a form a person types (``typed_names``: "go.work", `--force`) needs a cited note that
    writes one of them."""
    cited = [s for s in sources if s.item.item_id in {c.item_id for c in reading.citations}]
    seen = {
        term
        for s in cited
        for term in terms(f"{s.item.title} {' '.join(s.also_called)} {s.excerpt} {s.item.path}")
    }
    mentioned = {term for text in cited_notes(reading, sources) for term in terms(text)}
    named = names(question)
    if named and not any(len(name) <= 2 or _mentions(name, mentioned) for name in named):
        return False
    typed = typed_names(question)
    if typed and not any(
        _occurs_in(text, " ".join(cited_notes(reading, sources))) for text in typed
    ):
        return False  # "a go.work workspace" answered from notes that never write go.work
    wanted = topical(terms(question))
    if not wanted:
        return True
    if not any(_mentions(term, seen) for term in wanted):
        return False
    if _bare(question, reading):
        # A bare value ("$1,184.62", "Fundy Built Homes") says nothing of what it is: it
        # answers the question's subject only from a note about that subject. The tax return's
        # refund shares one word of five with "the refund for the cancelled whale-watching trip".
        covered = sum(_mentions(term, mentioned) for term in wanted)
        return covered >= BARE_TOPIC_SHARE * len(wanted)
    return True


# The forms of specific by which a question names a thing exactly (``claim_check.specifics``).
# A capitalised word run together ("JavaScript", "MacBook") is not among them: it is a name,
# which notes spell several ways ("JS", "Macbook Pro"), and ``names`` weighs it as one.
_TYPED_KINDS = frozenset({"code", "flag", "path", "key", "version", "identifier"})
_RUN_TOGETHER = re.compile(r"[A-Z][A-Za-z]+")


def typed_names(question: str) -> list[str]:
    """What ``question`` names in a form a person types ("go.work", "`--force-with-lease`",
    "~/.vimrc", "shared_preload_libraries", "v1.2"): an answer about it cites a note that
    writes at least one of them."""
    return [
        text
        for kind, text in specifics(question)
        if kind in _TYPED_KINDS and not (kind == "identifier" and _RUN_TOGETHER.fullmatch(text))
    ]


def cited_notes(reading: Reading, sources: Sequence[Source]) -> list[str]:
    """The text of each note ``reading`` cites, as shown: its title, aliases, folder and every
    chunk of it in the briefing, not only the part of the chunk cited ("Mom." opens Irene's
    note; her "Birthday gifts" table, the chunk cited, never says it; "mac/prevent-sleep..." is
    about a Mac)."""
    ids = {c.item_id for c in reading.citations}
    cited = [s for s in sources if s.item.item_id in ids]
    notes = {s.item.episode_id for s in cited if s.item.episode_id}
    return [
        f"{s.item.title} {' '.join(s.also_called)} {s.item.text} {s.item.path}"
        for s in sources
        if s in cited or s.item.episode_id in notes
    ]


# "What's Dev's last name?", "What is the surname of Ana?", "Dev's family name?": the name whose
# surname is asked (group 1 or 2).
_SURNAME_ASKED = re.compile(
    r"\b([A-Z][\w-]+)(?:'s|\u2019s)\s+(?:last|family|sur)\s?name\b"
    r"|\b(?:last|family|sur)\s?name\s+of\s+([A-Z][\w-]+)",
)


def writes_surname(question: str, reading: Reading, sources: Sequence[Source]) -> bool:
    """Whether a cited note writes the surname the answer gives as the asked person's: after
    the first name ("Dev Okafor"), or as the last word of the title of a note that is called by
    it ("Siobhan Delorme", also called Shiv). A note that names the person and someone else
    side by side ("Shiv + Dev for dinner") holds no surname of theirs: the small model reads
    the neighbour's name as one. True for any other question."""
    match = _SURNAME_ASKED.search(question)
    if not match:
        return True
    person = (match.group(1) or match.group(2)).casefold()
    asked = {word.casefold() for word in _CAPITALISED_WORD.findall(question)}
    given = {
        word.casefold()
        for claim in reading.claims
        for word in _CAPITALISED_WORD.findall(claim)
        if word.casefold() not in asked
    }
    ids = {c.item_id for c in reading.citations}
    for source in sources:
        if source.item.item_id not in ids:
            continue
        called = [source.item.title, *source.also_called]
        title_words = source.item.title.casefold().split()
        if (
            any(person in name.casefold().split() for name in called)
            and title_words[-1:]
            and (title_words[-1] in given)
        ):
            return True
        written = " ".join(source.item.text.split()).casefold()
        if any(f"{person} {surname}" in written for surname in given):
            return True
    return False


# The least share of a question's topical terms that the cited notes of a bare answer (a value
# and no words of its own) must mention (``on_topic``).
BARE_TOPIC_SHARE = 0.25
_CAPITALISED_WORD = re.compile(r"\b[A-Z][\w'\u2019-]*")


def _bare(question: str, reading: Reading) -> bool:
    """Whether every sentence of the answer adds to the question only values: figures and
    capitalised names, wherever they stand ("Fundy Built Homes", "$1,184.62")."""
    asked = set(terms(question))
    for claim in reading.claims:
        valued = {t for word in _CAPITALISED_WORD.findall(claim) for t in terms(word)}
        if any(t not in asked and t not in valued and not is_number(t) for t in terms(claim)):
            return False
    return bool(reading.claims)


def _mentions(term: str, mentioned: set[str]) -> bool:
    """Whether a term of the question is among ``mentioned``: as a term, or, three letters or
    more, as the start of one ("Mac" in "macOS"). (A name of one or two letters, "JS", is an
    abbreviation a note spells out as often as not, "JavaScript": ``on_topic`` asks nothing of
    it.)"""
    return term in mentioned or (
        len(term) >= 3 and any(other.startswith(term) for other in mentioned)
    )


# Where one sentence joins the answers to two parts ("It takes effect on 1 July, and the new
# salary is £58,000"): each clause is weighed against the parts on its own.
_CLAUSES = re.compile(r",?\s+(?:and|but|while|whereas)\s+(?=\w)|;\s+", re.IGNORECASE)


def unaddressed_parts(question: str, reading: Reading) -> list[str]:
    """The parts of a compound question that no sentence of ``reading`` answers, nor names as
    unanswered: a small model asked "what were they set to, and what command stopped that?"
    answers the first part and stops. A sentence, each of its clauses on its own, answers the
    part it shares most words with (every part it shares them with equally), when it says more
    than that part. A part with no word of its own ("..., and why?") is answered by a sentence
    beyond one for each other part. A part that asks for a specific of a form ("what error
    number", "which flag", "how many") is answered only by a clause that gives one."""
    parts = question_parts(question)
    if len(parts) < 2 or reading.declined:
        return []
    claims = [claim for claim in reading.claims if _adds(claim, question)]
    answered: set[str] = set()
    clauses = [clause for claim in claims for clause in _CLAUSES.split(claim)]
    for clause in clauses:
        said = set(terms(clause))
        shared = {part: len(said & set(terms(part))) for part in parts}
        most = max(shared.values())
        answered |= {part for part, n in shared.items() if most and n == most}
    wordless = [part for part in parts if not terms(part)]
    if len(claims) >= len(parts):
        answered |= set(wordless)
    answered -= {part for part in parts if not _gives_form(part, clauses, parts)}
    return [p for p in parts if p not in answered and p not in reading.unanswered_parts]


def _gives_form(part: str, clauses: Sequence[str], parts: Sequence[str]) -> bool:
    """Whether a clause gives ``part`` a specific of the form it asks for (``wanted_forms``: a
    figure for "what error number"), where the part asks for one: a clause that shares a word
    with the part, or that shares none with any part ("It is 1175.")."""
    forms = wanted_forms(part)
    if not forms:
        return True
    asked = set(terms(part))
    return any(
        forms & specific_kinds(clause)
        and (
            asked & set(terms(clause)) or not any(set(terms(p)) & set(terms(clause)) for p in parts)
        )
        for clause in clauses
    )


def strength(reading: Reading) -> int:
    """How well ``reading``'s best-supported citation holds its claim: 2 verbatim, 1 paraphrase,
    0 inference; -1 when it cites nothing."""
    return max((RANK[c.support] for c in reading.citations), default=-1)
