"""Obsidian wikilinks: ``[[Target]]``, ``[[Target#Heading]]``, ``[[Target|alias]]`` and the
embed ``![[Target]]``; a preceding backslash escapes one. Retrieval reads them into the link
graph; the orchestrator turns them back into plain words for a model's prompt. One pattern for
both, so the two never disagree on what a link is."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_PATTERN = re.compile(r"(?<!\\)(!?)\[\[([^\[\]\n]+?)\]\]")


@dataclass(frozen=True)
class WikiLink:
    """One wikilink's parts, stripped of surrounding spaces."""

    target: str
    heading: str
    alias: str
    embed: bool

    @property
    def words(self) -> str:
        """What a reader of the rendered note sees: the alias, else the target, else (a link to
        a heading of the same note) the heading."""
        return self.alias or self.target or self.heading


def _parse(match: re.Match[str]) -> WikiLink:
    target, _, alias = match.group(2).partition("|")
    target, _, heading = target.partition("#")
    return WikiLink(target.strip(), heading.strip(), alias.strip(), match.group(1) == "!")


def find_wikilinks(text: str) -> Iterator[WikiLink]:
    """Every wikilink of ``text``, in order."""
    return (_parse(match) for match in _PATTERN.finditer(text))


def replace_wikilinks(text: str, replacement: Callable[[WikiLink], str]) -> str:
    """``text`` with each wikilink replaced by ``replacement(link)``."""
    return _PATTERN.sub(lambda match: replacement(_parse(match)), text)
