"""Heading-aware chunking and Obsidian Markdown parsing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memex.retrieval.ingest.chunking import MAX_CHARS, chunk_body
from memex.retrieval.ingest.markdown import note_date, parse_note, split_frontmatter
from memex.retrieval.ingest.notes import Sensitivity, prepare
from memex.retrieval.names import NameMatcher
from memex.testing.retrieval import write


def test_sections_carry_heading_paths_and_offsets() -> None:
    intro = "An opening long enough to stand as a chunk of its own. " * 5
    body = f"{intro}\n# Plans\n## Q3\nship it\n## Q4\nrest\n# Other\ntext\n"
    chunks = chunk_body(body)
    assert [c.heading for c in chunks] == ["", "Plans > Q3", "Plans > Q4", "Other"]
    for c in chunks:
        assert body[c.start : c.end] == c.text
    assert chunks[1].text.startswith("# Plans")  # the empty "Plans" section joins "Q3"


def test_a_short_opening_joins_the_section_after_it() -> None:
    body = (
        "# Moving Flat\n\nFrom Larchfield Road to Stainburn Mount, December to May.\n\n"
        "## Why\n\nThe notice came on 6 January: out by 31 May 2026.\n\n"
        "## Timeline\n\n" + "- a dated step of the move, one line each.\n" * 8
    )
    chunks = chunk_body(body)
    assert [c.heading for c in chunks] == ["Moving Flat > Why", "Moving Flat > Timeline"]
    assert chunks[0].text.startswith("# Moving Flat\n\nFrom Larchfield Road")
    assert chunks[0].text.endswith("out by 31 May 2026.")
    for c in chunks:
        assert body[c.start : c.end] == c.text
    # An opening that says enough stays a chunk of its own; a note that is only a short
    # opening is still one chunk.
    long_lead = "An opening that says a good deal about the note, " * 6
    assert [c.heading for c in chunk_body(f"{long_lead}\n## Why\nbecause")] == ["", "Why"]
    assert [c.text for c in chunk_body("Just one line.")] == ["Just one line."]


def test_long_sections_split_at_word_boundaries() -> None:
    words = " ".join(f"word{i}" for i in range(2000))
    body = f"# Big\n{words}\n\n" + "para two. " * 300
    chunks = chunk_body(body)
    assert len(chunks) > 3
    for c in chunks:
        assert len(c.text) <= MAX_CHARS
        assert body[c.start : c.end] == c.text
        before = body[c.start - 1] if c.start else " "
        after = body[c.end] if c.end < len(body) else " "
        assert not (before.isalnum() and c.text[0].isalnum()), "cut mid-word at start"
        assert not (after.isalnum() and c.text[-1].isalnum()), "cut mid-word at end"
    covered = "".join(c.text for c in chunks).replace(" ", "").replace("\n", "")
    assert covered == body.replace(" ", "").replace("\n", "").replace("#Big", "#Big")


def test_a_section_of_megabytes_is_chunked_without_recursion() -> None:
    # A pasted transcript: one heading-less section of ~3,000 chunks, and a blob with no breaks.
    lines = "\n".join(
        f"line {i} of a very long transcript that somebody pasted." for i in range(80_000)
    )
    for body in (lines, "x" * 2_000_000):
        chunks = chunk_body(body)
        assert len(chunks) >= len(body) // MAX_CHARS
        assert all(0 < len(c.text) <= MAX_CHARS for c in chunks)
        assert all(body[c.start : c.end] == c.text for c in chunks[:: len(chunks) // 50])
        assert chunks[-1].end == len(body.rstrip())


def test_headings_in_code_blocks_do_not_split() -> None:
    body = "# Real\n```\n# not a heading\n```\nafter\n"
    assert [c.heading for c in chunk_body(body)] == ["Real"]


DRAWING = (
    "N4KAkARALgngDgUwgLgAQQQDwMYEMA2AlgCYBOuA7hADTgQBuCpAzoQPYB2KqATLZMzYBXUtiRoIACyhQ4zZAHoFAc0JRJQgEYA6bGwC2CgF7N6hbEcK4"
    * 40
)


def test_plugin_blocks_are_left_out_of_chunks_and_the_text_around_them_kept() -> None:
    body = (
        "# Projects\n\nEverything I am building this year.\n\n"
        "```dataview\nTABLE status FROM #project SORT file.mtime DESC\n```\n\n"
        "The boat comes first: new sails by May.\n\n"
        "```python\nprint('sails')\n```\n\n"
        "# Text Elements\nSail plan sketch ^a1b2\n\n%%\n# Drawing\n"
        f"```compressed-json\n{DRAWING}\n```\n%%\n"
    )

    chunks = chunk_body(body)

    text = "\n".join(c.text for c in chunks)
    assert "TABLE status" not in text and "N4KAk" not in text
    assert "Everything I am building" in text and "new sails by May" in text
    assert "print('sails')" in text  # code the person wrote stays
    assert "Sail plan sketch" in text
    assert all(body[c.start : c.end] == c.text for c in chunks)


def test_an_unclosed_plugin_block_runs_to_the_end_of_the_note() -> None:
    body = "Groceries for the week.\n\n```dataviewjs\ndv.table(['a'], [])\nmore\n"
    assert [c.text for c in chunk_body(body)] == ["Groceries for the week."]


def test_a_heading_before_a_plugin_block_does_not_pull_it_into_a_chunk() -> None:
    body = (
        "# Reading\n\n## Queue\n```dataview\nLIST FROM #book\n```\n"
        "Piranesi next, then Klara and the Sun.\n"
    )
    chunks = chunk_body(body)
    assert [(c.heading, c.text) for c in chunks] == [
        ("Reading > Queue", "Piranesi next, then Klara and the Sun.")
    ]


@pytest.mark.parametrize("body", ["", "   \n\n", "# Only heading"])
def test_degenerate_bodies(body: str) -> None:
    chunks = chunk_body(body)
    assert all(c.text.strip() for c in chunks)


def test_wikilinks_aliases_headings_embeds_and_code() -> None:
    note = parse_note(
        "See [[Alice Smith|my sister]], [[Plans#Q3]] and ![[photo.png]].\n"
        "Escaped \\[[Nope]] and `[[Inline]]`.\n```\n[[Fenced]]\n```\n#tag1 and #2024 #a/b\n"
    )
    assert [(ln.target_key, ln.heading, ln.alias, ln.embed) for ln in note.links] == [
        ("alice smith", "", "my sister", False),
        ("plans", "Q3", "", False),
        ("photo.png", "", "", True),
    ]
    assert note.tags == ["a/b", "tag1"]


def _prepared(text: str) -> list[tuple[str, str]]:
    """(chunk text, search text) of each chunk ``prepare`` makes of a note file's text."""
    rules = Sensitivity(frozenset(), ())
    note = prepare("people/Chi.md", text, 0.0, "fp", rules, lambda _: ())
    for piece in note.pieces:
        assert text[piece.start : piece.end] == piece.text
    return [(p.text, t) for p, t in zip(note.pieces, note.texts, strict=True)]


def test_frontmatter_properties_open_the_first_chunk() -> None:
    head = '---\ntitle: Chi\nphone: 0113 496 0000\ncompany: "[[Fernhill Software]]"\n---\n'
    opening = "Met at the allotment, where she has the plot by the gate. " * 5
    text = head + "\n" + opening + "\n\n## Kids\n\nTwo.\n"
    (first, searched), (second, _) = _prepared(text)
    assert first == head + "\n" + opening.strip()
    assert searched.startswith("Chi\n\n---\ntitle: Chi\nphone: 0113 496 0000")
    assert second == "## Kids\n\nTwo."
    assert [ln.target_key for ln in parse_note(text).links] == ["fernhill software"]


def test_a_note_of_properties_alone_is_one_chunk() -> None:
    text = "---\nauthor: Susanna Clarke\nrating: 5\n---\n\n"
    assert [c for c, _ in _prepared(text)] == ["---\nauthor: Susanna Clarke\nrating: 5\n---"]


def test_properties_too_long_to_join_the_first_chunk_are_a_chunk_of_their_own() -> None:
    head = "---\nsummary: " + "word " * 100 + "\n---\n"
    body = "Opening words. " * 100
    chunks = [c for c, _ in _prepared(head + body)]
    assert chunks[0] == head.rstrip()
    assert chunks[1] == body.strip()


@pytest.mark.parametrize(
    "block",
    [
        "title: Chi\ndate: 2025-01-02\ntags: [people]\naliases: [Chioma]",
        "kanban-plugin: basic\ncssclasses: [wide]\nsource:\nentity: chi",
        "",
    ],
)
def test_a_frontmatter_of_bookkeeping_alone_stays_out_of_the_chunks(block: str) -> None:
    assert [c for c, _ in _prepared(f"---\n{block}\n---\nMet at the allotment.\n")] == [
        "Met at the allotment."
    ]


def test_markdown_links_to_notes_are_links_and_resolve_by_file_name() -> None:
    note = parse_note(
        "Paid [the deposit](../home/Flat%20Deposit%20Agreement.md#Terms) "
        "per [the council](https://leeds.gov.uk) and `[code](x.md)`.\n"
    )
    assert [(ln.target_key, ln.heading, ln.alias) for ln in note.links] == [
        ("flat deposit agreement", "Terms", "the deposit")
    ]


def test_broken_frontmatter_keeps_the_body() -> None:
    fm, body, offset, warnings = split_frontmatter("---\ntitle: [oops\n---\nbody text\n")
    assert fm == {"title": "[oops"}
    assert body == "body text\n"
    assert offset == len("---\ntitle: [oops\n---\n")
    assert "invalid YAML" in warnings[0]


def test_broken_frontmatter_is_read_line_by_line_so_it_keeps_date_and_sensitivity() -> None:
    # A title with ": " in it is not valid YAML; Obsidian would ignore the whole block.
    text = (
        "---\ntitle: Open day: bring jam\ndate: 2025-07-19\nsensitive: true\n"
        "tags: [journal, allotment]\naliases:\n  - Jam day\n  - Open day\n---\nbody\n"
    )
    fm, body, _, warnings = split_frontmatter(text)
    assert fm == {
        "title": "Open day: bring jam",
        "date": dt.date(2025, 7, 19),
        "sensitive": True,
        "tags": ["journal", "allotment"],
        "aliases": ["Jam day", "Open day"],
    }
    assert body == "body\n"
    assert warnings == ["invalid YAML frontmatter at line 2; read line by line"]


@pytest.mark.parametrize(
    "block",
    [
        "date: 2026-02-30\ntitle: Leap",
        "date: 2026-02-30 10:00:00\ntitle: Leap",
        "title: [x\ndate: 2026-02-30",
    ],
)
def test_an_impossible_date_in_frontmatter_is_a_warning_not_an_error(block: str) -> None:
    # YAML reads 2026-02-30 as a date and then cannot build it (ValueError, not a YAMLError).
    fm, body, _, warnings = split_frontmatter(f"---\n{block}\n---\nbody\n")
    assert str(fm["date"]).startswith("2026-02-30")
    assert fm["title"] in ("Leap", "[x")
    assert body == "body\n"
    assert len(warnings) == 1 and "read line by line" in warnings[0]
    noon = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC).timestamp()
    date, warning = note_date(fm, noon)
    assert date == "2026-12-02"
    assert warning is not None and "is not a date" in warning


def test_yaml_aliases_are_not_expanded() -> None:
    # Nested aliases expand to 9**7 values; the frontmatter is read line by line instead.
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdef", "bcdefg", strict=True)
    ]
    text = "---\n" + "\n".join(levels) + "\ntags: *g\ntitle: Laughs\n---\nbody\n"
    fm, body, _, warnings = split_frontmatter(text)
    assert fm["title"] == "Laughs"
    assert fm["tags"] == "*g"
    assert body == "body\n"
    assert warnings == ["invalid YAML frontmatter at line 3; read line by line"]


def test_a_note_without_a_date_takes_its_file_name_date_then_its_file_time() -> None:
    noon = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC).timestamp()
    assert note_date({}, noon, "2025-07-19 — Allotment open day") == ("2025-07-19", None)
    assert note_date({}, noon, "2025-07-19") == ("2025-07-19", None)
    assert note_date({"date": "2024-01-02"}, noon, "2025-07-19") == ("2024-01-02", None)
    assert note_date({}, noon, "Allotment Plot 23B") == ("2026-12-02", None)
    assert note_date({}, noon, "2025-13-45 nonsense") == ("2026-12-02", None)
    assert note_date({}, noon, "20250719") == ("2026-12-02", None)
    date, warning = note_date({"date": "soon"}, noon, "2025-07-19 plans")
    assert date == "2025-07-19"
    assert warning == "frontmatter date 'soon' is not a date; used the file name's date"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("2025/07/19 Open day", "2025-07-19"),
        ("2025_07_19", "2025-07-19"),
        ("2025.7.9", "2025-07-09"),
        ("19 July 2025", "2025-07-19"),
        ("19th Jul 2025 — jam", "2025-07-19"),
        ("July 19th, 2025", "2025-07-19"),
        ("Saturday, July 19, 2025", "2025-07-19"),
        ("Sat 19 July 2025", "2025-07-19"),
        ("Sept. 3, 2024", "2024-09-03"),
        # Not dates: day and month order unknown, a number, no year, no such day, not a month.
        ("05/07/2025", "2026-12-02"),
        ("20250719", "2026-12-02"),
        ("July 19", "2026-12-02"),
        ("31 June 2025", "2026-12-02"),
        ("12 Angry Men 1957", "2026-12-02"),
        ("March 2025 budget", "2026-12-02"),
    ],
)
def test_a_daily_note_name_is_read_as_people_write_dates(name: str, expected: str) -> None:
    noon = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC).timestamp()
    assert note_date({}, noon, name) == (expected, None)


def test_frontmatter_dates_in_written_forms_and_other_keys() -> None:
    noon = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC).timestamp()
    assert note_date({"date": "19 July 2025"}, noon) == ("2025-07-19", None)
    assert note_date({"created": "2025/07/19 10:22"}, noon) == ("2025-07-19", None)
    assert note_date({"date created": "Saturday, July 19th 2025"}, noon) == ("2025-07-19", None)
    assert note_date({"created_at": dt.date(2025, 7, 19)}, noon) == ("2025-07-19", None)


def test_entity_matcher_whole_words_case_insensitive() -> None:
    match = NameMatcher(
        {"alice": ["Alice Smith", "Ali"], "bob": ["Bob"], "half": ["Half-Marathon"]}
    )
    assert match("met alice smith and BOB") == ("alice", "bob")
    assert match("Alicante and Bobby") == ()
    # Words, not characters: punctuation between a name's words may be written either way.
    assert match("my first half marathon, then Alice-Smith's") == ("alice", "half")


def test_a_note_that_is_not_utf8_is_read_as_obsidian_shows_it() -> None:
    from memex.retrieval.ingest.vault import decode

    assert decode("café £5".encode("utf-8-sig")) == ("café £5", "")
    # Saved by an older Windows editor: no UTF-8 sequence anywhere, so Windows-1252.
    assert decode("café “quoted” £5".encode("cp1252")) == (
        "café “quoted” £5",
        "invalid UTF-8 at byte 3; read as Windows-1252",
    )
    assert decode(b"caf\xe9 \x81")[0] == "caf\xe9 \x81"  # a byte cp1252 leaves undefined
    # UTF-8 with one bad byte: the rest stays as written, the bad byte is U+FFFD.
    text, how = decode("naïve ".encode() + b"\xff" + " £5".encode())
    assert text == "naïve \ufffd £5"
    assert how == "invalid UTF-8 at byte 7; bad bytes shown as \ufffd"


def test_obsidian_templates_are_not_notes(tmp_path: Path) -> None:
    from memex.retrieval.ingest.vault import scan

    write(tmp_path, ".obsidian/templates.json", '{"folder": "Meta/Templates/"}')
    write(tmp_path, ".obsidian/plugins/templater-obsidian/data.json", '{"templates_folder": "Tpl"}')
    write(tmp_path, ".obsidian/daily-notes.json", '{"folder": "Daily", "template": "Daily/Plan"}')
    write(tmp_path, "Meta/Templates/Meeting.md", "# {{title}}\nAttendees:\n")
    write(tmp_path, "Meta/Home.md", "Start here.\n")
    write(tmp_path, "Tpl/Weekly.md", "<% tp.date.now() %>\n")
    write(tmp_path, "Daily/Plan.md", "## Tasks\n")
    write(tmp_path, "Daily/2025-07-19.md", "Jam at the open day.\n")

    found = scan(tmp_path, ["*.md"], [], "records")

    assert sorted(f.rel for f in found.notes) == ["Daily/2025-07-19.md", "Meta/Home.md"]
    assert {s.rel: s.reason for s in found.skipped} == {
        "Meta/Templates": "an Obsidian template (.obsidian/templates.json)",
        "Tpl": "an Obsidian template (.obsidian/plugins/templater-obsidian/data.json)",
        "Daily/Plan.md": "an Obsidian template (.obsidian/daily-notes.json)",
    }


def test_broken_or_root_template_settings_name_nothing(tmp_path: Path) -> None:
    from memex.retrieval.ingest.vault import templates

    write(tmp_path, ".obsidian/templates.json", '{"folder": "/"}')
    write(tmp_path, ".obsidian/daily-notes.json", "{not json")
    write(tmp_path, ".obsidian/plugins/templater-obsidian/data.json", '["a list"]')
    assert templates(tmp_path) == {}
