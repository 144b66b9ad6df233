"""`memex eval`'s matching: whether an answer states a fact (numbers, dates and currency written
any common way) and whether a citation names a gold note. Pure functions; exact definitions are
in docs/eval.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from memex.cli.eval.questions import Fact

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTHS = {m[:3]: i for i, m in enumerate(_MONTH_NAMES, start=1)}
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_SMALL_NUMBERS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_SMALL_NUMBERS)} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "hundred": "100",
}


def _month(name: str) -> int:
    return _MONTHS[name[:3]]


def _iso(year: str, month: int, day: str = "") -> str:
    return f"{year}-{month:02d}" + (f"-{int(day):02d}" if day else "")


def _dates(text: str) -> str:
    """Dates written any common way become ISO: 2026-06-03, 06-03 without a year, 2026-06
    without a day; so '3rd June 2026', 'June 3, 2026' and '2026-06-03' all read the same."""
    text = re.sub(
        rf"\b{_DAY}(?: of)? {_MONTH},? (\d{{4}})\b",
        lambda m: _iso(m[3], _month(m[2]), m[1]),
        text,
    )
    text = re.sub(
        rf"\b{_MONTH} {_DAY},? (\d{{4}})\b", lambda m: _iso(m[3], _month(m[1]), m[2]), text
    )
    text = re.sub(
        r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b",  # the vault is British: day first
        lambda m: _iso(m[3], int(m[2]), m[1]) if 1 <= int(m[2]) <= 12 else m[0],
        text,
    )
    text = re.sub(
        rf"\b{_DAY}(?: of)? {_MONTH}\b", lambda m: f"{_month(m[2]):02d}-{int(m[1]):02d}", text
    )
    text = re.sub(rf"\b{_MONTH} {_DAY}\b", lambda m: f"{_month(m[1]):02d}-{int(m[2]):02d}", text)
    return re.sub(rf"\b{_MONTH} (\d{{4}})\b", lambda m: _iso(m[2], _month(m[1])), text)


def normalize(text: str) -> str:
    """Case-folded, whitespace-squashed text with numbers, dates and currency written one way:
    '£1,030.00' → '1030', 'nineteen' → '19', 'June 3rd, 2026' → '2026-06-03'."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DASHES).translate(_QUOTES)
    text = re.sub(r"\s+", " ", text).strip()
    text = _dates(text)
    text = re.sub(r"(?:[£$€]|\b(?:gbp|usd|eur))\s?(?=\d)", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = re.sub(r"(?<=\d)\.0+(?!\d)", "", text)
    return re.sub(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", lambda m: _NUMBER_WORDS[m[1]], text)


def _bounded(haystack: str, start: int, end: int, needle: str) -> bool:
    """A match that does not cut into a word or number: '48' is not in '480' nor in '48.5'."""
    before = haystack[start - 1] if start else " "
    after = haystack[end] if end < len(haystack) else " "
    if needle[0].isalnum() and before.isalnum():
        return False
    if needle[-1].isalnum() and after.isalnum():
        return False
    return not (needle[-1].isdigit() and after in ".," and haystack[end + 1 : end + 2].isdigit())


def contains(answer: str, phrase: str) -> bool:
    """Whether ``answer`` states ``phrase`` (both normalized; whole words and numbers only)."""
    haystack, needle = normalize(answer), normalize(phrase)
    if not needle:
        return True
    start = haystack.find(needle)
    while start != -1:
        if _bounded(haystack, start, start + len(needle), needle):
            return True
        start = haystack.find(needle, start + 1)
    return False


def missing_facts(answer: str, facts: Sequence[Fact]) -> list[str]:
    """The facts the answer does not state (each named by its first alternative)."""
    return [f[0] for f in facts if not any(contains(answer, alt) for alt in f)]


def ref_key(ref: str) -> str:
    """A citation ref or gold title, compared loosely: '[[Flat Deposit Agreement#Terms|the deal]]'
    and 'flat deposit agreement' are the same note, and so is a gold note named by its file,
    'legal/Flat Deposit Agreement.md' (a note's title is its file name unless its frontmatter
    says otherwise); 'inbox:x' stays a record ref."""
    ref = unicodedata.normalize("NFKC", ref).strip()
    if ref.startswith("[[") and ref.endswith("]]"):
        ref = re.split(r"[#|]", ref[2:-2], maxsplit=1)[0]
    if ref.casefold().endswith(".md"):
        ref = ref[:-3].rsplit("/", 1)[-1]
    return re.sub(r"\s+", " ", ref.translate(_DASHES)).strip().casefold()


def is_gold(ref: str, gold: Iterable[str], path: str = "") -> bool:
    """Whether a citation names one of the gold notes, by its title or, when the stack gave it,
    by its note's file ('legal/Flat Deposit.md' is gold 'Flat Deposit' whatever its title)."""
    keys = {ref_key(g) for g in gold}
    return ref_key(ref) in keys or (bool(path) and ref_key(path) in keys)
