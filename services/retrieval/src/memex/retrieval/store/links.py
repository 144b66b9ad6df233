"""The names a note can be linked by, and the wikilinks between notes: ``link_key`` (the normal
form in which every backend compares names, with plain equality), a note's frontmatter aliases,
and ``Link`` (no gRPC, no backend imports).

Kept apart from ``base``, which holds the store protocols and the records they exchange: the
indexer's wikilink and frontmatter parsing, forgetting and the backends' codecs use these.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memex.shared.aliases import other_names


def link_key(name: str) -> str:
    """The normalised form under which a note can be linked: NFC, case-folded, whitespace
    collapsed, a trailing ``.md`` and any folder prefix dropped. ``Note.keys`` and
    ``Link.target_key`` are always in this form, so backends compare them with plain equality."""
    text = unicodedata.normalize("NFC", name).strip()
    if text.lower().endswith(".md"):
        text = text[:-3]
    text = text.rsplit("/", 1)[-1]
    return re.sub(r"\s+", " ", text).casefold().strip()


def frontmatter_aliases(frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """The other names a note goes by: frontmatter ``aliases`` (or ``alias``), in order, once."""
    value = frontmatter.get("aliases", frontmatter.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    names = (str(v).strip() for v in value if v is not None)
    return tuple(dict.fromkeys(n for n in names if n))


def shown_aliases(title: str, frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """The aliases a note's search results carry: those its title does not already say."""
    return other_names(title, frontmatter_aliases(frontmatter))


@dataclass(frozen=True)
class Link:
    """A wikilink from a note: ``[[Target]]``, ``[[Target|alias]]``, ``[[Target#Heading]]`` or the
    embed ``![[Target]]``. The target may not exist (yet); it is resolved at read time by matching
    ``target_key`` against ``Note.keys``."""

    target_key: str
    heading: str = ""
    alias: str = ""
    embed: bool = False
