"""The numbered briefing (SPEC B7, issue 10): sources [1]..[n] within a token budget."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

from memex.orchestrator.answer.lexical import terms
from memex.orchestrator.answer.sources import (
    EMPTY_MEMORY_NOTE,
    dateline,
    estimate_tokens,
    leading,
    plain,
    render_all,
    select,
    spoken_date,
    tighten,
)
from memex.orchestrator.memory.items import ShownItem


def item(n: int, text: str, **fields: object) -> ShownItem:
    values: dict[str, object] = {
        "item_id": f"c{n}",
        "episode_id": f"ep{n}",
        "ref": f"[[Note {n}]]",
        "title": f"Note {n}",
        "text": text,
    }
    values.update(fields)
    return ShownItem(**values)  # type: ignore[arg-type]


def test_sources_are_numbered_with_their_provenance_and_kind() -> None:
    items = [
        item(1, "Shipped the auth refactor this week.", date="2026-03-14", title="Warden retro"),
        item(2, "Landlord.", kind="record", ref="entities:p7", title="Dana Ruiz"),
        item(3, "Prefers mornings.", kind="belief", ref="beliefs:b1", title=""),
        item(4, "Slept 5h12m.", kind="observation", ref="observations:o1", title=""),
    ]
    sources = select(items, "what shipped?", token_budget=1000, excerpt_chars=700, limit=8)
    text = render_all(sources)
    assert text.startswith(
        "Sources:\n\n[1] Warden retro (14 March 2026)\nShipped the auth refactor this week."
    )
    assert "[2] Record: Dana Ruiz\nLandlord." in text
    assert "[3] Belief (a conclusion drawn from the notes, not the person's words): beliefs:b1" in (
        text
    )
    assert "[4] Observation (from a connected service): observations:o1" in text
    assert [s.number for s in sources] == [1, 2, 3, 4]


def test_the_budget_is_in_tokens_and_always_leaves_one_source() -> None:
    items = [item(n, f"Sentence number {n} about the garden. " * 10) for n in range(1, 9)]
    one = estimate_tokens(
        render_all(select(items[:1], "garden", token_budget=10_000, excerpt_chars=1600, limit=8))
    )
    sources = select(items, "garden", token_budget=one * 3, excerpt_chars=1600, limit=8)
    assert 2 <= len(sources) <= 3
    assert sum(estimate_tokens(render_all([s])) for s in sources) <= one * 3 + 10
    assert len(select(items, "garden", token_budget=1, excerpt_chars=1600, limit=8)) == 1
    assert len(select(items, "garden", token_budget=10_000, excerpt_chars=1600, limit=5)) == 5


def test_a_long_chunk_is_tightened_to_the_sentences_that_match_the_question() -> None:
    filler = " ".join(f"Line {n} is about something unrelated entirely." for n in range(30))
    text = f"{filler} The allotment plot costs £48 a year. {filler}"
    excerpt, parts = tighten(text, Counter(terms("What does the allotment cost?")), 200)
    assert "The allotment plot costs £48 a year." in excerpt
    assert len(excerpt) <= 204
    assert excerpt.startswith("… ") and excerpt.endswith(" …")
    assert all(p.text == text[p.start : p.end] for p in parts)  # verbatim slices


def test_words_that_name_the_note_place_the_excerpt_only_when_nothing_else_does() -> None:
    # "my 2025 return" names the note "Tax return 2025": its title heading matched two words,
    # the refund's sentence one, and the window stopped short of the refund.
    filler = "\n".join(f"- Receipt {n}: something claimed that year." for n in range(12))
    text = (
        f"# Tax return 2025\nFiled Mar 28 with the free version.\n{filler}\n"
        "**Result: refund of $1,184.62.** CRA direct deposit landed on April 9."
    )
    tax = item(1, text, title="Tax return 2025")
    [source] = select([tax], "How much did I get back from CRA on my 2025 return?", **_ONE)
    assert "$1,184.62" in source.excerpt
    [source] = select([tax], "When did I file my 2025 tax return?", **_ONE)
    assert "Filed Mar 28" in source.excerpt  # only the note's words: they place it, as before


_ONE = {"token_budget": 1000, "excerpt_chars": 200, "limit": 8}


def test_every_sentence_that_matches_as_well_as_the_best_is_kept_with_its_table_header() -> None:
    rows = "\n".join(
        f"| {m} | Book number {n} | fine |"
        for n, m in enumerate(
            ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct"), 1
        )
    )
    text = (
        "Target: one book a month. Managed nine by November.\n\n"
        f"| month | book | verdict |\n|---|---|---|\n{rows}\n| Nov | Piranesi | comfort |\n"
    )
    excerpt, parts = tighten(text, Counter(terms("Which novel did I read in November?")), 200)
    assert "Managed nine by November." in excerpt  # the first match, as before
    assert "| Nov | Piranesi | comfort |" in excerpt  # an equal match further on, kept too
    assert "| month | book | verdict |" in excerpt  # what the row's cells are
    assert "|\n…\n|" in excerpt  # the rows left out are marked, on a line of their own
    assert len(excerpt) <= 204
    assert all(p.text == text[p.start : p.end] for p in parts)


def test_obsidian_marks_a_reader_never_sees_are_left_out_of_the_excerpt() -> None:
    text = (
        "> [!info]- Rent\n> £48 a year, due 1 January. ^rent-2026\n\n"
        "New sails by May. Then the mooring. ^q3\n"
        "Price [!] list stays, and so does x^2."
    )
    assert plain(text) == (
        "> Rent\n> £48 a year, due 1 January.\n\nNew sails by May. Then the mooring.\n"
        "Price [!] list stays, and so does x^2."
    )


def test_footnote_marks_and_links_to_notes_read_as_their_words() -> None:
    text = (
        "Rent is £48 a year[^1], paid to [the association](Moor%20Allotments.md).\n\n"
        "[^1]: Raised from £40 in 2025.\nSee [the site](https://moor.org.uk)."
    )
    assert plain(text) == (
        "Rent is £48 a year, paid to the association.\n\n"
        "Raised from £40 in 2025.\nSee [the site](https://moor.org.uk)."
    )


def test_iso_dates_read_as_notes_write_dates() -> None:
    text = "# 2026-02-03\nfinished: 2026-02-03, then 2026-13-01 and build 2026-02-03-rc1."
    assert plain(text, "2026-02-03") == (
        "finished: 3 February 2026, then 2026-13-01 and build 2026-02-03-rc1."
    )


def test_a_task_box_is_shown_in_words() -> None:
    text = (
        "- [x] Council tax: Band B.\n- [ ] Register to vote.\n  * [/] Shelves [2 of 3]\n"
        "1. [-] Blind\n- [>] Paint\n- [?] odd box stays\n[ ] not a list item"
    )
    assert plain(text) == (
        "- (done) Council tax: Band B.\n- (to do) Register to vote.\n"
        "  * (in progress) Shelves [2 of 3]\n1. (cancelled) Blind\n- (deferred) Paint\n"
        "- [?] odd box stays\n[ ] not a list item"
    )


def test_a_short_chunk_is_shown_whole_and_repeats_are_skipped() -> None:
    items = [item(1, "Short note."), item(2, "Short   note."), item(3, "Another.")]
    sources = select(items, "note", token_budget=1000, excerpt_chars=700, limit=8)
    assert [s.item.item_id for s in sources] == ["c1", "c3"]
    assert sources[0].excerpt == "Short note."


def test_an_empty_memory_is_said_literally() -> None:
    assert render_all([]) == EMPTY_MEMORY_NOTE


@pytest.mark.parametrize(
    "forms",
    [
        "study studied studies",
        "cost costs",
        "carry carried",
        "move moving moved",
        "vote voting voted",
        "agree agreed",
        "run running ran",
        "pay pays paid paying",
        "drive drove driven driving",
        "leave left leaving",
        "plan planned",
        "fill filling",
        "November Nov nov.",
        "September Sep Sept",
        "Tuesday Tue Tues tuesdays",
    ],
)
def test_the_forms_of_a_word_share_one_stem(forms: str) -> None:
    stems = {stem for word in forms.split() for stem in terms(word)}
    assert len(stems) == 1, stems


def test_a_first_pass_is_the_leading_sources_that_fit_and_at_least_one() -> None:
    items = [item(n, f"Sentence number {n} about the garden. " * 10) for n in range(1, 9)]
    sources = select(items, "garden", token_budget=10_000, excerpt_chars=1600, limit=8)
    one = estimate_tokens(render_all(sources[:1]))
    assert leading(sources, one * 2 + 10) == sources[:2]
    assert leading(sources, 1) == sources[:1]
    assert leading(sources, 10_000) == sources


@pytest.mark.parametrize(
    ("iso", "spoken"),
    [
        ("2026-12-10", "10 December 2026"),
        ("2025-03-01", "1 March 2025"),
        ("2026-05", "May 2026"),
        ("2026-13-01", "2026-13-01"),  # not a date: shown as it is
        ("soon", "soon"),
    ],
)
def test_dates_are_shown_as_notes_write_them(iso: str, spoken: str) -> None:
    assert spoken_date(iso) == spoken


def test_a_record_header_says_what_its_date_is_and_its_status() -> None:
    due = {"title": "Plan Christmas", "due": "2026-12-10", "status": "pending"}
    inbox = item(
        1,
        "Plan Christmas",
        kind="record",
        title="Plan Christmas",
        date="2026-12-10",
        attributes=due,
    )
    event = item(
        2, "Kirkstall", kind="record", date="2026-10-11", attributes={"date": "2026-10-11"}
    )
    # A note's date is the note's own; a note has no status even when its front matter says so.
    note = item(3, "Draft.", date="2026-04-28", attributes={"status": "draft"})
    assert dateline(inbox) == "due 10 December 2026, pending"
    assert dateline(event) == "11 October 2026"
    assert dateline(note) == "28 April 2026"
    text = render_all(select([inbox], "by when?", token_budget=500, excerpt_chars=400, limit=8))
    assert "[1] Record: Plan Christmas (due 10 December 2026, pending)\n" in text


def test_the_briefing_says_what_day_it_is() -> None:
    # "last year's review" and "how long ago" count from today. The line is in the user's
    # message, so the system prompt stays one cached prefix: an ask has it after the sources
    # (a first pass's prompt is still the start of its widened one), a chat turn first.
    from memex.orchestrator.answer.briefing import (
        CITE_REMINDER,
        answer_messages,
        chat_turn,
        today_line,
    )
    from memex.orchestrator.turn.persona import load_personas

    day = dt.date(2026, 12, 4)
    assert today_line(day) == "Today is Friday 4 December 2026."
    persona = load_personas().get("", "ask")
    system, user = answer_messages(persona, [], "When was my last review?", day)
    assert today_line(day) not in system.content
    assert user.content.startswith("(The memory is empty")
    assert user.content.endswith(
        "\n\nToday is Friday 4 December 2026.\nQuestion: When was my last review?\n" + CITE_REMINDER
    )
    assert chat_turn([], "and last week?", day).startswith("Today is Friday 4 December 2026.\n\n")


def test_a_note_header_names_the_other_names_of_the_note_that_the_question_uses() -> None:
    # "Who is Chi?" was answered from another note: nothing in the briefing said Chioma is Chi.
    # What retrieval sends: the aliases the title does not say ("Chioma" it does).
    aliases = ["Chi", "my sister", "Project C"]
    sister = item(1, "Paediatric nurse.", title="Chioma Okafor", attributes={"aliases": aliases})
    record = item(2, "Call her.", kind="record", title="Call Chi", attributes={"aliases": ["x"]})

    def briefed(question: str) -> str:
        return render_all(
            select([sister, record], question, token_budget=500, excerpt_chars=400, limit=8)
        )

    # Whole words only: "Chioma" does not hold "Chi".
    assert "[1] Chioma Okafor, also called Chi\n" in briefed("Who is Chi? Is Chi well?")
    assert "[1] Chioma Okafor, also called Chi or my sister\n" in briefed("my sister Chi?")
    # An alias the question does not use costs tokens and tells the model nothing.
    assert "[1] Chioma Okafor\n" in briefed("Where does Chioma work?")
    assert "[2] Record: Call Chi\n" in briefed("Who is Chi?")
