"""Obsidian-flavoured Markdown: YAML frontmatter, wikilinks, tags, code spans (no I/O)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from memex.retrieval.store.links import Link, link_key
from memex.shared.dates import MONTHS, WEEKDAY_ABBREVIATIONS, WEEKDAYS
from memex.shared.wikilinks import find_wikilinks

# Part of every note's fingerprint: a change to what a note's text is read to mean (its title,
# date, sensitivity) must reach notes already indexed. 2: broken frontmatter is read line by
# line, and a daily note's file name gives its date.
PARSER_VERSION = "4"  # 3: dates written "2025/07/19", "19 July 2025", "July 19th, 2025"
# 4: links in frontmatter properties ("company: '[[Fernhill Software]]'") and Markdown links to
# notes ("[the deposit](Flat%20Deposit.md)")
_FRONTMATTER = re.compile(
    r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_TAG = re.compile(r"(?:(?<=\s)|^)#([\w][\w/-]*)", re.M | re.UNICODE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_LOOSE_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*))?$")
_LOOSE_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*)$")
# Dates as notes and daily-note names write them. All-digit forms only with the year first
# (2025-07-19, 2025_07_19, 2025.07.19, 2025/07/19): 05/07/2025 is May or July depending on who
# wrote it, and 20250719 may be any number.
_NUMERIC_DATE = re.compile(r"(\d{4})([-_./])(\d{1,2})\2(\d{1,2})(?!\d)")
_WEEKDAY = (
    r"(?:(?:"
    + "|".join(sorted({*WEEKDAYS, *WEEKDAY_ABBREVIATIONS}, key=len, reverse=True))
    + r")\.?,?\s+)?"
)
_DAY_MONTH_YEAR = re.compile(
    _WEEKDAY + r"(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{4})(?!\d)", re.I
)
_MONTH_DAY_YEAR = re.compile(
    _WEEKDAY + r"([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})(?!\d)", re.I
)
# Frontmatter keys that hold when a note was written, most specific first ("date created" is
# the Linter plugin's).
DATE_KEYS = ("date", "created", "date created", "created_at", "creation date", "creation_date")
# Frontmatter keys that memex reads for itself (title, date, tags, sensitivity, salience, the
# records a note stands for) or that only steer how Obsidian shows or publishes a note. A
# frontmatter of only these says nothing a reader would ask about; any other key with a value
# ("phone", "author", "rating") is one of the note's properties.
_BOOKKEEPING_KEYS = frozenset(
    {
        *DATE_KEYS,
        *("title", "aliases", "alias", "tags", "tag", "cssclass", "cssclasses", "publish"),
        *("permalink", "sensitive", "salience", "importance", "record", "records", "entity"),
        *("entity_id", "modified", "updated", "date modified", "last modified", "updated_at"),
        *("modified_at", "position"),
    }
)


class _FrontmatterLoader(yaml.SafeLoader):
    """YAML without aliases (``*name``). Notes do not use them, and nested aliases expand to
    millions of values ("billion laughs"): a 200-byte frontmatter held the indexer for 42 s."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not read in frontmatter", event.start_mark
            )
        return super().compose_node(parent, index)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_FrontmatterLoader)  # a SafeLoader: no Python objects


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


def _loose_value(text: str) -> Any:
    """One value of a frontmatter YAML refused: YAML where it reads as a value on its own
    ("true", "[a, b]", "2025-07-19"), else the text ("Open day: bring jam")."""
    text = text.strip()
    try:
        value = _load_yaml(text)
    except (yaml.YAMLError, ValueError):  # ValueError: a date YAML reads but cannot build
        return text
    return text if isinstance(value, dict) else value


def loose_frontmatter(block: str) -> dict[str, Any]:
    """What can be read of a frontmatter that is not valid YAML: its top-level ``key: value``
    lines, each value read on its own, and ``  - item`` lines as the list of the key above. A
    title with a colon in it is the usual cause, and one bad line must not cost the note its
    date or its ``sensitive: true``."""
    data: dict[str, Any] = {}
    key: str | None = None
    for line in block.splitlines():
        item = _LOOSE_ITEM.match(line)
        if item and key is not None and (data[key] is None or isinstance(data[key], list)):
            data[key] = [*(data[key] or []), _loose_value(item.group(1))]
            continue
        pair = _LOOSE_KEY.match(line)
        if pair:
            key = pair.group(1)
            data[key] = _loose_value(pair.group(2)) if pair.group(2) else None
    return data


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int, list[str]]:
    """(frontmatter, body, body offset, warnings). Broken YAML leaves the body indexed, a
    warning, and what its ``key: value`` lines say (``loose_frontmatter``); a frontmatter that
    is not a mapping is ignored with a warning."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 0, []
    body_offset = match.end()
    try:
        data = _load_yaml(match.group(1)) or {}
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a valid but impossible date
        warning = f"{_unreadable(exc)}; read line by line"
        return loose_frontmatter(match.group(1)), text[body_offset:], body_offset, [warning]
    if not isinstance(data, dict):
        return {}, text[body_offset:], body_offset, ["frontmatter is not a mapping; ignored"]
    return {str(k): v for k, v in data.items()}, text[body_offset:], body_offset, []


def _unreadable(exc: Exception) -> str:
    """Why a frontmatter block could not be loaded, for the note's warning."""
    if not isinstance(exc, yaml.YAMLError):  # date: 2026-02-30 is YAML, but no date
        return f"frontmatter value YAML cannot read ({exc})"
    mark = getattr(exc, "problem_mark", None)
    return f"invalid YAML frontmatter{f' at line {mark.line + 2}' if mark is not None else ''}"


@dataclass(frozen=True)
class Fence:
    """A fenced code block: its offsets in the body (fence lines included) and its language."""

    start: int
    end: int
    language: str
    """The info string's first word, case-folded ("dataview"); "" when there is none."""


def fences(body: str) -> list[Fence]:
    """The fenced blocks of ``body``, in order. A block closes at a line of only its fence
    character, at least as long as its opening fence; an unclosed one runs to the end of the
    body, as Obsidian shows it."""
    found: list[Fence] = []
    opened: tuple[int, str, str] | None = None  # start, fence, language
    offset = 0
    for line in body.split("\n"):
        end = min(offset + len(line) + 1, len(body))
        if opened is None:
            if fence := _FENCE.match(line):
                opened = (offset, fence[1], fence[2].casefold())
        elif len(closing := line.strip()) >= len(opened[1]) and set(closing) == {opened[1][0]}:
            found.append(Fence(opened[0], end, opened[2]))
            opened = None
        offset += len(line) + 1
    if opened is not None:
        found.append(Fence(opened[0], len(body), opened[2]))
    return found


def code_mask(body: str) -> list[bool]:
    """Per line: True if the line is inside a fenced code block (fence lines included)."""
    mask: list[bool] = []
    blocks = iter(fences(body))
    block = next(blocks, None)
    offset = 0
    for line in body.split("\n"):
        while block is not None and block.end <= offset:
            block = next(blocks, None)
        mask.append(block is not None and block.start <= offset)
        offset += len(line) + 1
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
    return [
        Link(target_key=key, heading=link.heading, alias=link.alias, embed=link.embed)
        for link in find_wikilinks(text)
        if (key := link_key(link.target))
    ]


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


def has_properties(frontmatter: dict[str, Any]) -> bool:
    """Whether the frontmatter holds a property with a value beyond the bookkeeping memex reads
    itself (``_BOOKKEEPING_KEYS``; a plugin's marker such as ``kanban-plugin: basic`` is
    bookkeeping too)."""
    return any(
        value not in (None, "", [], {})
        and key.casefold() not in _BOOKKEEPING_KEYS
        and not key.casefold().endswith("-plugin")
        for key, value in frontmatter.items()
    )


def parse_note(text: str) -> ParsedNote:
    """Frontmatter, body, links (in the body's prose and in frontmatter properties, as Obsidian
    reads them) and tags (frontmatter ``tags`` plus inline ``#tags`` in prose)."""
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
        links=parse_links(text[:offset]) + parse_links(visible),
        tags=sorted(set(t for t in tags if t)),
        warnings=warnings,
    )


def written_date(text: str) -> dt.date | None:
    """The date ``text`` starts with, in a form people write: ``2025-07-19`` (also with ``/``,
    ``.`` or ``_``), ``19 July 2025``, ``July 19th, 2025``, ``Saturday, 19 Jul 2025``; None when
    it starts with none, or the date does not exist."""
    text = text.strip()
    try:
        if found := _NUMERIC_DATE.match(text):
            return dt.date(int(found[1]), int(found[3]), int(found[4]))
        if (found := _DAY_MONTH_YEAR.match(text)) and found[2].casefold() in MONTHS:
            return dt.date(int(found[3]), MONTHS[found[2].casefold()], int(found[1]))
        if (found := _MONTH_DAY_YEAR.match(text)) and found[1].casefold() in MONTHS:
            return dt.date(int(found[3]), MONTHS[found[1].casefold()], int(found[2]))
    except ValueError:
        return None
    return None


def _name_date(name: str) -> str | None:
    """The date a file name starts with, as daily notes are named ("2025-07-19 — Open day",
    "July 19th, 2025")."""
    day = written_date(name)
    return day.isoformat() if day else None


def note_date(frontmatter: dict[str, Any], mtime: float, name: str = "") -> tuple[str, str | None]:
    """(YYYY-MM-DD, warning): frontmatter ``date`` (or ``created``, ``DATE_KEYS``), else the
    date the file ``name`` starts with (a daily note), else the file time (which a copied or
    synced vault may have lost)."""
    named = _name_date(name)
    fallback = named or dt.datetime.fromtimestamp(mtime, dt.UTC).date().isoformat()
    for key in DATE_KEYS:
        value = frontmatter.get(key)
        if isinstance(value, dt.datetime):
            return value.date().isoformat(), None
        if isinstance(value, dt.date):
            return value.isoformat(), None
        if isinstance(value, str) and value.strip():
            day = written_date(value)
            if day:
                return day.isoformat(), None
            source = "the file name's date" if named else "the file time"
            return fallback, f"frontmatter {key} {value!r} is not a date; used {source}"
    return fallback, None


def headings(line: str) -> tuple[int, str] | None:
    """(level, title) if the line is an ATX heading."""
    match = _HEADING.match(line)
    if not match:
        return None
    return len(match.group(1)), match.group(2).strip()
