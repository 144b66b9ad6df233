"""A sentence that says the opposite of the notes it cites (issue 35)."""

from __future__ import annotations

from memex.orchestrator.answer.lexical import segments
from memex.orchestrator.answer.polarity import Stance, contradicts, stances
from memex.orchestrator.answer.reading import read
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.memory.items import ShownItem

NOTE = (
    "Blocks can refer to their argument as `it`. Note: we cannot mix numbered parameters "
    "(`_1`, `_2`) with `it`; that is a syntax error. The dry-run flag won't _show_ the files."
)


def test_each_auxiliary_and_verb_is_read_with_its_polarity_and_what_follows() -> None:
    assert Stance("can", "mix", True, frozenset({"number", "parameter", "1", "2"})) in stances(NOTE)
    # emphasis is not part of a word; "won't" is "will not"
    assert any(s.verb == "show" and s.negated and s.family == "will" for s in stances(NOTE))
    assert not stances("Yes, you can.")  # an auxiliary with no verb states nothing here


def test_a_sentence_that_drops_the_notes_not_contradicts_them() -> None:
    assert contradicts("You can mix `it` with numbered parameters like `_1`.", [NOTE])
    assert not contradicts("You cannot mix `it` with numbered parameters.", [NOTE])
    assert contradicts("The dry-run flag will show the files.", [NOTE])


def test_only_the_same_verb_about_the_same_thing_counts() -> None:
    # "mix" about something else, and "can" against "must", are not the note's claim
    assert not contradicts("You can mix colours in the palette.", [NOTE])
    assert not contradicts("You must mix numbered parameters.", [NOTE])
    # a note that writes both polarities ("cannot X unless ... can X") contradicts neither
    both = NOTE + " With the flag set, you can mix numbered parameters."
    assert not contradicts("You can mix numbered parameters.", [both])


def _source(text: str) -> Source:
    item = ShownItem(item_id="c1", episode_id="ep1", ref="[[it]]", title="it", text=text)
    return Source(1, item, text, tuple(segments(text)))


def test_the_check_cuts_the_reversed_sentence_and_leaves_its_part_to_be_asked_again() -> None:
    question = "Which Ruby release added `it`, and can I mix it with numbered parameters?"
    note = _source("Ruby 3.4 added `it`. " + NOTE)
    reading = read(
        "Ruby 3.4 added `it` [1]. You can mix it with numbered parameters like `_1` [1].",
        [note],
        question,
    )
    assert reading.answer == "Ruby 3.4 added `it` [[it]]."
    assert reading.dropped_claims and not reading.main_unsupported
    # not "your notes don't answer": they do, and the answer said the opposite
    assert reading.unanswered_parts == ()
    reversed_only = read("You can mix `it` with numbered parameters [1].", [note], "Can I mix?")
    assert reversed_only.main_unsupported
