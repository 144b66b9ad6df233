"""Links between notes as Obsidian reads them: wikilinks ``[[Target]]``, ``[[Target#Heading]]``,
``[[Target|alias]]``, the embed ``![[Target]]``, and the Markdown links that vaults with "Use
[[Wikilinks]]" switched off (and exports from Notion and others) write instead:
``[the rent](Allotment%20Plot.md#Rent)``, ``![](receipt.png)``. A preceding backslash escapes
one; a Markdown link to a web address (any ``scheme:``) is not a link between notes. Retrieval
reads them into the link graph; the orchestrator turns them back into plain words for a model's
prompt. One pattern for both, so the two never disagree on what a link is."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote

_PATTERN = re.compile(
    r"(?<!\\)(!?)(?:\[\[([^\[\]\n]+?)\]\]"
    r"|\[([^\[\]\n]*)\]\((?:<([^<>\n]+)>|([^()\s]+))(?:[ \t]+\"[^\"\n]*\")?\))"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


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


def _parse(match: re.Match[str]) -> WikiLink | None:
    """The link a match is; None for a Markdown link to a web address."""
    embed = match.group(1) == "!"
    if match.group(2) is not None:
        target, _, alias = match.group(2).partition("|")
        target, _, heading = target.partition("#")
        return WikiLink(target.strip(), heading.strip(), alias.strip(), embed)
    address = match.group(4) or match.group(5)
    if _SCHEME.match(address):
        return None
    target, _, heading = unquote(address).partition("#")
    if target.lower().endswith(".md"):
        target = target[:-3]
    return WikiLink(target.strip(), heading.strip(), match.group(3).strip(), embed)


def find_wikilinks(text: str) -> Iterator[WikiLink]:
    """Every link between notes in ``text``, in order."""
    return (link for match in _PATTERN.finditer(text) if (link := _parse(match)) is not None)


def replace_wikilinks(text: str, replacement: Callable[[WikiLink], str]) -> str:
    """``text`` with each link between notes replaced by ``replacement(link)``; links to web
    addresses stay as written."""

    def replace(match: re.Match[str]) -> str:
        link = _parse(match)
        return match.group(0) if link is None else replacement(link)

    return _PATTERN.sub(replace, text)
