"""Whether a sentence of an answer says the opposite of the notes it cites (issue 35).

The claim check holds every specific to a cited note, but a sentence can carry every specific
right and its verb the wrong way round: "You can mix `it` with `_1`" from a note that writes
"we cannot mix numbered parameters (`_1`, `_2`) with the `it` parameter". A small model drops a
"not" as easily as it changes a figure. So each "can/will/do/must/is ... VERB" of a sentence is
read with its polarity and what follows it, and a sentence says the opposite of its notes when
they write the same verb, of the same auxiliary, about something the sentence also names, only
with the other polarity. The reading is by form (auxiliaries, "not", contractions), not any
vault's words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memex.orchestrator.answer.lexical import STOPWORDS, terms

# Each auxiliary with the family whose verbs it can be weighed against ("can" with "cannot",
# "could" with "can't"; "must" with "should not" is not a contradiction, so families differ).
_FAMILY = {
    **dict.fromkeys(("can", "could", "may", "might"), "can"),
    **dict.fromkeys(("will", "would", "shall"), "will"),
    **dict.fromkeys(("do", "does", "did"), "do"),
    **dict.fromkeys(("must", "should", "need"), "must"),
    **dict.fromkeys(("is", "are", "was", "were"), "be"),
}
# A negated auxiliary written as one word: its family.
_NEGATED = {
    "cannot": "can",
    "can't": "can",
    "cant": "can",
    "couldn't": "can",
    "won't": "will",
    "wouldn't": "will",
    "don't": "do",
    "doesn't": "do",
    "didn't": "do",
    "mustn't": "must",
    "shouldn't": "must",
    "isn't": "be",
    "aren't": "be",
    "wasn't": "be",
    "weren't": "be",
}
_NOT = frozenset({"not", "never"})
# Words that may stand between an auxiliary and its verb without changing what it says.
_BETWEEN = frozenset(
    """also still only just even really always actually then already easily safely simply
    be been being""".split()  # noqa: SIM905 - as lexical.STOPWORDS
)
_WORD = re.compile(r"[^\W\d][\w'-]*|\d[\w.]*|[.;:!?](?=\s|$)")
# Markdown emphasis around a word ("won't _show_"), which is not part of it.
_EMPHASIS = re.compile(r"(?<!\w)[_*]+(?=\w)|(?<=\w)[_*]+(?!\w)")
_STOPS = frozenset(".;:!?")
# How many words after the verb say what it is about ("mix | numbered parameters with it").
_OBJECT_WORDS = 6


@dataclass(frozen=True)
class Stance:
    """One auxiliary and verb as written: "cannot mix numbered parameters" is (can, mix, True)
    about {number, paramet}."""

    family: str
    verb: str
    negated: bool
    about: frozenset[str]


@functools.lru_cache(maxsize=512)
def stances(text: str) -> tuple[Stance, ...]:
    """Each "auxiliary (not) verb" of ``text``, with its polarity and the content terms of the
    words that follow it. An auxiliary followed by no verb ("it is the default", "yes, you
    can.") states nothing here. Cached: the claim check reads every cited excerpt once per
    sentence and per round, and an excerpt is shown in ask after ask."""
    words = _WORD.findall(_EMPHASIS.sub("", text.casefold().replace("\u2019", "'")))
    found: list[Stance] = []
    for at, word in enumerate(words):
        family = _FAMILY.get(word) or _NEGATED.get(word)
        if family is None:
            continue
        negated = word in _NEGATED
        step = at + 1
        while step < len(words) and (words[step] in _NOT or words[step] in _BETWEEN):
            negated ^= words[step] in _NOT
            step += 1
        if step >= len(words) or not words[step].isalpha() or words[step] in STOPWORDS:
            continue
        verb = terms(words[step])
        if not verb:
            continue
        following = words[step + 1 : step + 1 + _OBJECT_WORDS]
        stop = next((i for i, w in enumerate(following) if w in _STOPS), len(following))
        about = frozenset(terms(" ".join(following[:stop])))
        found.append(Stance(family, verb[0], negated, about))
    return tuple(found)


def contradicts(sentence: str, notes: Iterable[str]) -> bool:
    """Whether ``sentence`` says of something the opposite of what ``notes`` (the text of the
    notes it cites) say of it: a verb it writes with one polarity, which the notes write about
    the same thing only with the other."""
    written = [stance for note in notes for stance in stances(note)]
    for said in stances(sentence):
        same = [
            stance
            for stance in written
            if (stance.family, stance.verb) == (said.family, said.verb)
            and stance.about & said.about
        ]
        if same and all(stance.negated != said.negated for stance in same):
            return True
    return False
