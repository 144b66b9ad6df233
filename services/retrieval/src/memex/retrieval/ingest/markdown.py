"""Obsidian-flavoured Markdown: YAML frontmatter, wikilinks, tags, code spans (no I/O)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from memex.retrieval.store.base import Link, link_key

_FRONTMATTER = re.compile(
    r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M
)
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
# [[Target]], [[Target#Heading]], [[Target|alias]], ![[Embed]]; a preceding backslash escapes.
_WIKILINK = re.compile(r"(?<!\\)(!?)\[\[([^\[\]\n]+?)\]\]")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_TAG = re.compile(r"(?:(?<=\s)|^)#([\w][\w/-]*)", re.M | re.UNICODE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


@dataclass
class ParsedNote:
    """What one note file says about itself."""

    frontmatter: dict[str, Any]
    body: str
    body_offset: int
    """Where ``body`` starts in the file text (frontmatter length)."""
    links: list[Link] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int, list[str]]:
    """(frontmatter, body, body offset, warnings). Broken YAML leaves the body indexed and a
    warning; a frontmatter that is not a mapping is ignored with a warning."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 0, []
    body_offset = match.end()
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return {}, text[body_offset:], body_offset, [f"invalid YAML frontmatter{where}; ignored"]
    if not isinstance(data, dict):
        return {}, text[body_offset:], body_offset, ["frontmatter is not a mapping; ignored"]
    return {str(k): v for k, v in data.items()}, text[body_offset:], body_offset, []


def code_mask(body: str) -> list[bool]:
    """Per line: True if the line is inside a fenced code block (fence lines included)."""
    mask: list[bool] = []
    fence: str | None = None
    for line in body.split("\n"):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence = opener.group(1)
            mask.append(True)
        elif fence is not None:
            mask.append(True)
            if line.strip().startswith(fence):
                fence = None
        else:
            mask.append(False)
    return mask


def prose(body: str) -> str:
    """The body with fenced blocks and inline code blanked out (same length, so offsets hold)."""
    lines = body.split("\n")
    mask = code_mask(body)
    kept = [(" " * len(line)) if masked else line for line, masked in zip(lines, mask, strict=True)]
    text = "\n".join(kept)
    return _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)


def parse_links(text: str) -> list[Link]:
    """Wikilinks outside code; ``[[Note#H|alias]]`` gives target, heading and alias."""
    links: list[Link] = []
    for match in _WIKILINK.finditer(text):
        inner = match.group(2)
        target, _, alias = inner.partition("|")
        target, _, heading = target.partition("#")
        key = link_key(target)
        if key:
            links.append(
                Link(
                    target_key=key,
                    heading=heading.strip(),
                    alias=alias.strip(),
                    embed=match.group(1) == "!",
                )
            )
    return links


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def normalize_tag(tag: str) -> str:
    """Lower-case, without the leading ``#``."""
    return tag.strip().lstrip("#").casefold()


def parse_note(text: str) -> ParsedNote:
    """Frontmatter, body, links and tags (frontmatter ``tags`` plus inline ``#tags`` in prose)."""
    frontmatter, body, offset, warnings = split_frontmatter(text)
    visible = prose(body)
    tags = [normalize_tag(t) for t in _as_list(frontmatter.get("tags", frontmatter.get("tag")))]
    for line in visible.split("\n"):
        if _HEADING.match(line) and line.lstrip().startswith("# "):
            continue
        tags += [normalize_tag(t) for t in _TAG.findall(line) if not t.isdigit()]
    return ParsedNote(
        frontmatter=frontmatter,
        body=body,
        body_offset=offset,
        links=parse_links(visible),
        tags=sorted(set(t for t in tags if t)),
        warnings=warnings,
    )


def aliases(frontmatter: dict[str, Any]) -> list[str]:
    """Frontmatter ``aliases`` (or ``alias``) as a list."""
    value = frontmatter.get("aliases", frontmatter.get("alias"))
    if isinstance(value, str):
        return [value]
    return _as_list(value) if isinstance(value, list | tuple) else []


def note_date(frontmatter: dict[str, Any], mtime: float) -> tuple[str, str | None]:
    """(YYYY-MM-DD, warning): frontmatter ``date`` (or ``created``), else the file time."""
    for name in ("date", "created"):
        value = frontmatter.get(name)
        if isinstance(value, dt.datetime):
            return value.date().isoformat(), None
        if isinstance(value, dt.date):
            return value.isoformat(), None
        if isinstance(value, str) and value.strip():
            try:
                return dt.date.fromisoformat(value.strip()[:10]).isoformat(), None
            except ValueError:
                fallback = dt.datetime.fromtimestamp(mtime, dt.UTC).date().isoformat()
                return fallback, f"frontmatter {name} {value!r} is not a date; used the file time"
    return dt.datetime.fromtimestamp(mtime, dt.UTC).date().isoformat(), None


def headings(line: str) -> tuple[int, str] | None:
    """(level, title) if the line is an ATX heading."""
    match = _HEADING.match(line)
    if not match:
        return None
    return len(match.group(1)), match.group(2).strip()
