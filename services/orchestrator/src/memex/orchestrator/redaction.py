"""Redaction of personal data before prompts and responses reach the LLM log (SPEC B4)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

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
        digits = re.sub(r"\D", "", match.group(0))
        if not 8 <= len(digits) <= 15 or _DATE.fullmatch(match.group(0).strip()):
            return match.group(0)
    if label == "SECRET" and match.lastindex == 2:
        return f"{match.group(1)}{match.group(2)}[SECRET]"
    return f"[{label}]"


def redact(text: str, sensitive_texts: Iterable[str] = ()) -> str:
    """``text`` with personal data and the text of sensitive items replaced by labels."""
    for sensitive in sorted({s for s in sensitive_texts if s.strip()}, key=len, reverse=True):
        text = text.replace(sensitive, "[SENSITIVE ITEM]")
    for label, pattern in _PATTERNS:
        text = pattern.sub(functools.partial(_replace, label), text)
    return text
