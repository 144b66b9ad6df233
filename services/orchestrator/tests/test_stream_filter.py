"""The stream filter (SPEC B9), with property tests over every way to cut a reply into chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memex.orchestrator.answer.stream_filter import (
    CITATIONS_MARKER,
    THINK_CLOSE,
    THINK_OPEN,
    RepeatGuard,
    StreamFilter,
)


def reference(text: str) -> tuple[str, str]:
    """What the client should see, and the citations tail, computed on the whole reply at once."""
    visible, position = "", 0
    while True:
        think = text.find(THINK_OPEN, position)
        marker = text.find(CITATIONS_MARKER, position)
        if think < 0 and marker < 0:
            return (visible + text[position:]).lstrip(), ""
        if marker < 0 or 0 <= think < marker:
            visible += text[position:think]
            close = text.find(THINK_CLOSE, think + len(THINK_OPEN))
            if close < 0:
                return visible.lstrip(), ""
            position = close + len(THINK_CLOSE)
        else:
            return (visible + text[position:marker]).lstrip(), text[
                marker + len(CITATIONS_MARKER) :
            ]


def run(chunks: list[str]) -> tuple[list[str], str]:
    stream = StreamFilter()
    deltas = [stream.feed(chunk) for chunk in chunks] + [stream.finish()]
    return [d for d in deltas if d], stream.citations_text


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


prose = st.text(
    alphabet=st.characters(blacklist_characters="<@", blacklist_categories=["Cs"]), max_size=40
)
pieces = st.one_of(
    prose,
    prose.map(lambda s: f"{THINK_OPEN}{s}{THINK_CLOSE}"),
    st.sampled_from(["@", "@@", "@@CIT", "<", "<th", "</think", "<think", "@@CITATIONS@"]),
)
replies = st.lists(pieces, max_size=8).map("".join)


@given(replies, st.lists(st.integers(min_value=0), max_size=12))
def test_any_chunking_gives_the_same_visible_text_and_citations(text: str, cuts: list[int]) -> None:
    deltas, citations = run(split(text, cuts))
    assert ("".join(deltas), citations) == reference(text)


@given(
    st.lists(
        st.one_of(prose, prose.map(lambda s: f"{THINK_OPEN}{s}@@CITA<th{THINK_CLOSE}")), max_size=6
    ),
    prose,
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_no_marker_fragment_ever_reaches_the_client(
    parts: list[str], tail: str, cuts: list[int]
) -> None:
    text = (
        "".join(parts) + f"\n{CITATIONS_MARKER}\n" + '[{"episode": "e1", "quote": "' + tail + '"}]'
    )
    deltas, citations = run(split(text, cuts))
    assert all("@" not in d and "<" not in d for d in deltas)
    assert citations.startswith("\n[")


def test_think_blocks_are_dropped_and_the_tail_is_diverted() -> None:
    chunks = [
        "<thi",
        "nk>plan the answer</th",
        "ink>\n\nThe deposit is ",
        "£800.\n@@CITA",
        'TIONS@@\n[{"episode": "a"}]',
    ]
    deltas, citations = run(chunks)
    assert "".join(deltas) == "The deposit is £800.\n"
    assert citations == '\n[{"episode": "a"}]'


def test_an_unclosed_think_tag_drops_the_rest() -> None:
    deltas, citations = run(["Sure. ", "<think>secret reasoning", " that never ends"])
    assert "".join(deltas) == "Sure. "
    assert citations == ""


def test_text_that_only_looked_like_a_marker_is_released_at_the_end() -> None:
    deltas, _ = run(["mail me at a@@", "CIT"])
    assert "".join(deltas) == "mail me at a@@CIT"


def test_the_repeat_guard_stops_at_the_first_repeated_sentence() -> None:
    guard = RepeatGuard()
    assert not guard.feed("The deposit was £1,030 in the end. ")
    assert not guard.feed("Graham paid it on 3 June. The deposit was ")
    assert guard.feed("£1,030 in the end. More")
    assert guard.kept == "The deposit was £1,030 in the end. Graham paid it on 3 June."


def test_short_repeats_are_not_loops() -> None:
    guard = RepeatGuard()
    assert not guard.feed("Yes. Yes. Thank you. Thank you.")
    assert guard.kept == "Yes. Yes. Thank you. Thank you."
