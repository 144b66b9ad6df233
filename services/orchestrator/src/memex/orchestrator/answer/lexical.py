"""Word-level text measures for briefing and grounding: no model, no index, deterministic.

Small models cite by source number; memex then has to find, mechanically, which sentence of the
cited source supports a claim and how closely. These helpers split text into segments (sentences
and list lines), reduce it to content terms (case folded, lightly stemmed, numbers without their
thousands separators) and measure how much of a claim a segment covers. Figures and amounts
weigh double: a claim that gets the amount wrong is not supported by the right sentence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from memex.shared.dates import MONTHS, WEEKDAYS

_TOKEN = re.compile(r"\d[\d,.:]*\d|\d|[^\W\d_]+(?:'[^\W\d_]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9£$€#*-])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+|>)\s*")

NUMBER_WEIGHT = 2.0

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    get got tell know say said thing things much many one ever still yet us let lets
    i'm i've i'd i'll don't didn't doesn't isn't wasn't won't can't
    """.split()  # noqa: SIM905 - a list literal of 150 words would not be read
)


# Irregular past forms of common verbs, read as their base form: a suffix strip cannot give
# "ran" the stem of "run", and "I ran the Harewood race in [3]" must read as restating "What
# did I run the Harewood race in?" (and "paid" must match a source that says "pay").
_IRREGULAR = {
    form: base
    for line in """
    begin began begun, break broke broken, bring brought, build built, buy bought,
    catch caught, choose chose chosen, come came, drink drank drunk, drive drove driven,
    eat ate eaten, fall fell fallen, feel felt, find found, fly flew flown, go went gone goes,
    forget forgot forgotten, give gave given, grow grew grown, hear heard,
    hold held, keep kept, lead led, leave left, lend lent, lose lost, make made, mean meant,
    meet met, pay paid, ride rode ridden, ring rang rung, rise rose risen, run ran,
    see saw seen, sell sold, send sent, sing sang sung, sit sat, sleep slept,
    speak spoke spoken, spend spent, stand stood, steal stole stolen, swim swam swum,
    take took taken, teach taught, think thought, throw threw thrown, understand understood,
    wake woke woken, wear wore worn, win won, write wrote written
    """.split(",")  # noqa: SIM905 - base form first, then its irregular forms
    for base, *forms in [line.split()]
    for form in forms
}


def _stem(word: str) -> str:
    """A light suffix strip that gives the forms of a word one stem: cost/costs,
    agree/agreed, move/moving/moved, vote/voting, study/studied/studies, plan/planned,
    run/running."""
    for suffix, keep in (
        ("ies", "y"),
        ("ied", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            stem = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed") and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, planned -> plan
            elif suffix == "ed" and stem.endswith("e"):
                stem += "e"  # agreed -> agree, freed -> free
            return _drop_final_e(stem)
    return _drop_final_e(word)


def _drop_final_e(stem: str) -> str:
    # "move" and "moving" meet at "mov"; "vote" and "voting" at "vot".
    return stem[:-1] if len(stem) >= 4 and stem.endswith("e") and not stem.endswith("ee") else stem


def topical(question_terms: Iterable[str]) -> set[str]:
    """The terms of a question that say what it is about: all but the common verbs (those of
    ``_IRREGULAR``: go, pay, make, take...) and the units of time, unless nothing else is left.
    "How much do I pay for contents insurance?" is about contents insurance; a source that says
    "paid" is not. "How much goes into my pension each month?" is about a pension; a savings line
    of "£150 a month" is not."""
    wanted = set(question_terms)
    return (wanted - COMMON_VERBS - TIME_UNITS) or wanted


# Month and weekday abbreviations, read as the whole word: a table row "| Nov | Piranesi |"
# answers "which novel did I read in November?", and "Tue" is a Tuesday ("Sat" and "Sun" are
# words too, so they stay as they are).
_ABBREVIATIONS = {
    word[:3]: word
    for word in """january february march april june july august september october november
    december monday tuesday wednesday thursday friday""".split()  # noqa: SIM905 - as STOPWORDS
} | {"sept": "september", "tues": "tuesday", "thur": "thursday", "thurs": "thursday"}


# Number words as figures, so "three visits" holds the claim "3 visits" ("one" is a stop word).
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
        fifteen sixteen seventeen eighteen nineteen twenty""".split()  # noqa: SIM905
    )
} | {word: str(10 * tens) for tens, word in enumerate(["thirty", "forty", "fifty", "sixty"], 3)}


def _normal(token: str) -> str:
    if token[0].isdigit():
        figure = token.replace(",", "").rstrip(".")
        # "03" in 2026-02-03 is the 3 of "3 February"
        return figure.lstrip("0") or "0" if figure.isdigit() else figure
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    word = token.removesuffix("'s")
    word = _ABBREVIATIONS.get(word, word)
    return _stem(_IRREGULAR.get(word, word))


COMMON_VERBS = frozenset(_stem(base) for base in set(_IRREGULAR.values()))
TIME_UNITS = frozenset(
    _stem(unit) for unit in ("minute", "hour", "day", "week", "fortnight", "month", "year", "time")
)


def terms(text: str) -> list[str]:
    """The content terms of ``text``: stop words dropped, stemmed, numbers normalised."""
    out = []
    for match in _TOKEN.finditer(text.casefold().replace("\u2019", "'")):
        token = match.group()
        if token in STOPWORDS or token.removesuffix("'s") in STOPWORDS:
            continue
        out.append(_normal(token))
    return out


_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
_NOT_NAMES = {*MONTHS, *WEEKDAYS, "i"}


def names(question: str) -> set[str]:
    """The terms of the names a question uses: its capitalised words after the first ("Station
    Eleven", "CRA", "Shiv's"), months and weekdays aside (a note dated on a Tuesday need not say
    "Tuesday")."""
    words = _WORD.findall(question)[1:]
    return {
        term
        for word in words
        if word[0].isupper() and word.casefold() not in _NOT_NAMES
        for term in terms(word)
        if not is_number(term)  # "Eleven" is 11, which any note may hold
    }


def is_number(term: str) -> bool:
    """Whether a term is a figure (an amount, a date part, a time)."""
    return term[:1].isdigit()


# A figure written as money ("$4", "£1,030.00") and a figure with a unit of measure after it
# ("4 mm", "99,870 km", "3 days", "40%").
_MONEY = re.compile(r"[$£€¥]\s?(\d[\d,]*(?:\.\d+)?)")
_MEASURED = re.compile(
    r"(?<![\d.,])(\d[\d,]*(?:\.\d+)?)\s?(?:%|°|(?:mm|cm|km|kms|m|kg|g|lbs?|oz|mi|miles?|ml|l"
    r"|litres?|liters?|hrs?|hours?|mins?|minutes?|secs?|seconds?|days?|weeks?|months?|years?"
    r"|am|pm|kwh|mph|kph|degrees?)(?![A-Za-z]))",
    re.IGNORECASE,
)


def figure_form(text: str) -> str:
    """A written figure as one form: "1,030.00" is "1030"."""
    value = text.replace(",", "")
    return value[:-3] if value.endswith(".00") else value


def money(text: str) -> set[str]:
    """The amounts of money ``text`` writes with a currency sign, as ``_figure`` forms."""
    return {figure_form(found[1]) for found in _MONEY.finditer(text)}


def only_measured(figure: str, text: str) -> bool:
    """Whether ``figure`` appears in ``text`` only as a measure ("4 mm", never "$4" or "4"), so a
    claim that writes it as money did not read it there."""
    written = [
        figure_form(found[1]) for found in re.finditer(r"(?<![\d.,])(\d[\d,]*(?:\.\d+)?)", text)
    ]
    measured = [figure_form(found[1]) for found in _MEASURED.finditer(text)]
    return figure in written and written.count(figure) == measured.count(figure)


def weight(term: str) -> float:
    """How much a term counts in coverage."""
    return NUMBER_WEIGHT if is_number(term) else 1.0


@dataclass(frozen=True)
class Segment:
    """A sentence or list line of a source, with its offsets in that source's text."""

    start: int
    end: int
    text: str


def segments(text: str) -> list[Segment]:
    """Sentences and list lines of ``text``, in order; each is a verbatim slice of ``text``."""
    out: list[Segment] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        start = 0
        pieces = _SENTENCE_END.split(body) if body.strip() else []
        for piece in pieces:
            at = body.find(piece, start)
            start = at + len(piece)
            stripped = piece.strip()
            if stripped and terms(stripped):
                begin = offset + at + piece.find(stripped)
                out.append(Segment(begin, begin + len(stripped), stripped))
        offset += len(line)
    return out


def coverage(claim_terms: Iterable[str], source_terms: Iterable[str]) -> float:
    """The weighted share of the claim's distinct terms that the source contains (0..1)."""
    wanted = set(claim_terms)
    if not wanted:
        return 0.0
    have = set(source_terms)
    total = sum(weight(t) for t in wanted)
    return sum(weight(t) for t in wanted if t in have) / total


def overlap_score(query_terms: Counter[str], text: str) -> float:
    """How strongly ``text`` matches a query: weighted distinct query terms it contains."""
    present = set(terms(text))
    return sum(weight(t) for t in query_terms if t in present)


def squash(text: str) -> str:
    """Whitespace squashed to single spaces and case folded, for quote matching (SPEC B10)."""
    return " ".join(text.split()).casefold()


def strip_list_mark(text: str) -> str:
    """A segment without its Markdown bullet, number or heading mark."""
    return _LIST_MARK.sub("", text, count=1)
