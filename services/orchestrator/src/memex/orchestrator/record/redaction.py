"""Redaction of personal data before prompts and responses reach the LLM log (SPEC B4).

Two kinds: patterns (emails, phone and card numbers, IBANs, accounts, keys and secrets) in any
text, and the text of sensitive items. A sensitive item the model was shown (a local reasoner
sees them unless ``MEMEX_ORCHESTRATOR_LOCAL_SEES_SENSITIVE=false``) is logged as a marker naming
its episode, ``[SENSITIVE episode=...]``: its source block in the prompt, every sentence of the
prompt or the response that mostly repeats its words (a reply quoting it, the chat history), and
every sentence of the response that cites its source number. So the audit row still
says which sources were redacted, and never what they say.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memex.orchestrator.answer.lexical import coverage, segments, terms

# A sentence that repeats this share of a sensitive item's content words is redacted with it,
# when it has at least MIN_TERMS of them (so a short question naming the topic is kept).
REPEATS_AT = 0.5
MIN_TERMS = 3

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("EMAIL", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    # Keys and tokens: provider prefixes, bearer tokens, key=value secrets, PEM blocks.
    (
        "SECRET",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
    ),
    ("SECRET", re.compile(r"\b(?:sk|pk|rk|ghp|gho|ghs|xox[abp]|AKIA|ASIA)[-_A-Za-z0-9]{12,}\b")),
    ("SECRET", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{12,}")),
    (
        "SECRET",
        re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key)\b(\s*[:=]\s*)\S+"),
    ),
    ("IBAN", re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,4})?\b")),
    ("CARD", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("PHONE", re.compile(r"(?<![\w/])\+?\d[\d ().-]{7,}\d(?![\w/])")),
    (
        "ACCOUNT",
        re.compile(
            r"(?i)\b(?:account|acct|sort code|routing)"
            r"(?:\s+(?:no\.?|number|#))?\s*[:#]?\s*[\d-]{4,}"
        ),
    ),
]


_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _replace(label: str, match: re.Match[str]) -> str:
    if label == "CARD":
        digits = re.sub(r"\D", "", match.group(0))
        if not _luhn_ok(digits):
            return match.group(0)  # a long number, not a card: the phone rule may still take it
    if label == "PHONE":
        # A date's digits are not a phone number's: "Sprint 14 (2025-09-26)" keeps its date.
        digits = re.sub(r"\D", "", _DATE.sub("", match.group(0)))
        if not 8 <= len(digits) <= 15:
            return match.group(0)
    if label == "SECRET" and match.lastindex == 2:
        return f"{match.group(1)}{match.group(2)}[SECRET]"
    return f"[{label}]"


@dataclass(frozen=True)
class Sensitive:
    """A sensitive item in a model call: what of it to find in the call's text, and the marker
    that replaces it in the LLM log."""

    marker: str  # "[SENSITIVE episode=ep-1]"
    spans: tuple[str, ...]  # verbatim texts to replace (its source block, excerpt, whole text)
    number: int = 0  # its source number in the prompt; 0 when it was not shown (withheld)

    @property
    def terms(self) -> set[str]:
        """The content words of its longest span."""
        return set(terms(max(self.spans, key=len, default="")))


def marker(episode_id: str, item_id: str) -> str:
    """How a sensitive item reads in the LLM log: by its episode id (else its item id)."""
    return f"[SENSITIVE episode={episode_id}]" if episode_id else f"[SENSITIVE item={item_id}]"


def _cites(sentence: str, number: int) -> bool:
    return number > 0 and re.search(rf"\[[^\[\]]*\b{number}\b[^\[\]]*\]", sentence) is not None


def _sentences(text: str, items: Sequence[Sensitive], by_number: bool) -> str:
    """Sentences that mostly repeat a sensitive item's words (or, ``by_number``, cite its source
    number), replaced by its marker; from the end, so earlier offsets hold."""
    known = [(item, item.terms) for item in items]
    for part in reversed(segments(text)):
        if "[SENSITIVE " in part.text:
            continue  # already a marker (its source block): keep the number before it
        words = terms(part.text)
        for item, its_terms in known:
            repeats = len(words) >= MIN_TERMS and coverage(words, its_terms) >= REPEATS_AT
            if repeats or (by_number and _cites(part.text, item.number)):
                text = f"{text[: part.start]}{item.marker}{text[part.end :]}"
                break
    return text


def redact(
    text: str, sensitive_texts: Iterable[str | Sensitive] = (), *, by_number: bool = False
) -> str:
    """``text`` with personal data and the text of sensitive items replaced by labels: a plain
    string by ``[SENSITIVE ITEM]``, a ``Sensitive`` by its marker (see the module's docstring).
    ``by_number``: also sentences citing a sensitive source's number, as a model's reply does
    (not the prompt, whose rules give example numbers)."""
    given = list(sensitive_texts)
    items = [s for s in given if isinstance(s, Sensitive)]
    spans = [(s, "[SENSITIVE ITEM]") for s in given if isinstance(s, str)]
    spans += [(span, item.marker) for item in items for span in item.spans]
    for span, label in sorted({p for p in spans if p[0].strip()}, key=lambda p: -len(p[0])):
        text = text.replace(span, label)
    if items:
        text = _sentences(text, items, by_number)
    for label, pattern in _PATTERNS:
        text = pattern.sub(functools.partial(_replace, label), text)
    return text
