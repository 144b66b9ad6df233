"""The claim check (issue 35): every specific an answer states is in a source it cites."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.claim_check import Shown, holds, specifics, verdicts
from memex.orchestrator.answer.lexical import segments
from memex.orchestrator.answer.reading import read
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.answer.streams import ClaimGate, ReplyStream
from memex.orchestrator.memory.items import ShownItem


def source(number: int, text: str, title: str) -> Source:
    item = ShownItem(
        item_id=f"c{number}", episode_id=f"ep{number}", ref=f"[[{title}]]", title=title, text=text
    )
    return Source(number, item, text, tuple(segments(text)))


CLONE = source(
    1,
    "Using the `--depth` flag with `git-clone` clones a repo without its history.\n\n"
    "```bash\n$ git clone --depth 1 git@github.com:me/til.git\n```\n\n"
    "See `man git-clone` for more details.",
    "clone-a-repo-just-for-the-files",
)
IDENTIFIERS = source(
    2,
    "Identifiers are cut at 63 bytes. The limit is NAMEDATALEN - 1, set when Postgres is "
    "compiled. `SET statement_timeout = '5s';` caps a query; the default is 0.",
    "max-identifier-length",
)
SOURCES = [CLONE, IDENTIFIERS]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Use `git reflog` to find it.", [("code", "git reflog")]),
        ("Pass --depth 1 to clone.", [("flag", "--depth"), ("figure", "1")]),
        ("Edit ~/.vimrc and press Ctrl-W.", [("path", "~/.vimrc"), ("key", "Ctrl-W")]),
        (
            "It is set by pg_size_pretty and useEffect.",
            [("identifier", "pg_size_pretty"), ("identifier", "useEffect")],
        ),
        ("It came in version 9.4, three days later.", [("version", "9.4"), ("figure", "three")]),
        ("It ran in 2:04:37 and cost £1,030.", [("figure", "2:04:37"), ("figure", "£1,030")]),
        ("Then ask Graham in Leeds on Monday.", [("name", "Graham"), ("name", "Leeds")]),
        ("Yes. The rent is due.", []),  # words that open a sentence name nothing
    ],
)
def test_specifics_are_found_by_their_form(sentence: str, expected: list[tuple[str, str]]) -> None:
    assert specifics(sentence) == expected


def test_a_specific_is_held_normalised_and_as_a_whole() -> None:
    shown = Shown.of("[[x]]", "Run `git clone --depth 1`; it costs £1,030 and 63 bytes.")
    assert holds("code", "GIT  clone --depth 1", shown)  # case and spacing
    assert holds("figure", "1030", shown) and holds("figure", "sixty-three", shown) is False
    assert holds("flag", "--depth", shown)
    assert not holds("flag", "--dep", shown)  # part of a longer flag is not the flag
    assert not holds("version", "1.0", shown)
    assert not holds("code", "git clone --depth 2", shown)
    # A code span may fill in one word where the note writes a placeholder, and only there.
    assert not holds("code", "git clone --depth 1 myrepo", shown)
    template = Shown.of("[[x]]", "Run `git clone --depth 1 <repo>` or `docker compose up`.")
    assert holds("code", "git clone --depth 1 git@host:me/til.git", template)
    assert not holds("code", "docker system up", template)


def test_verdicts_name_the_source_that_holds_each_specific() -> None:
    shown = [Shown.of(s.ref, s.excerpt) for s in SOURCES]
    found = verdicts("Set `statement_timeout` (default 0), or use --shallow.", shown, "")
    assert [(s.text, s.verdict, s.ref) for s in found] == [
        ("statement_timeout", "supported", "[[max-identifier-length]]"),
        ("--shallow", "unsupported", ""),
        ("0", "supported", "[[max-identifier-length]]"),
    ]


def test_a_name_the_question_uses_is_not_a_claim() -> None:
    found = verdicts("Postgres cuts names at 63 bytes.", [Shown.of("[[a]]", "63 bytes")], "")
    assert [s.verdict for s in found] == ["supported"]  # "Postgres" opens the sentence
    found = verdicts("In Redis, names are cut at 63.", [Shown.of("[[a]]", "63")], "Does Redis?")
    assert [s.verdict for s in found] == ["supported", "restated"]


def test_what_the_question_quotes_is_restated_and_a_fenced_line_is_code_as_a_whole() -> None:
    shown = [Shown.of("[[a]]", "Add `gem 'rexml'` to the Gemfile.")]
    question = "Why do I get `cannot load such file -- rexml/document`?"
    found = verdicts("The `cannot load such file -- rexml/document` error", shown, question)
    assert [s.verdict for s in found] == ["restated"]
    assert [s.verdict for s in verdicts("$ gem 'rexml'", shown, code=True)] == ["supported"]
    assert [s.verdict for s in verdicts("$ gem install rexml", shown, code=True)] == ["unsupported"]


def test_a_fenced_command_no_source_holds_is_cut() -> None:
    answer = "Clone it like this [1]:\n\n```bash\n$ git clone --shallow me/til\n```\n"
    reading = read(answer, SOURCES, "How do I clone without history?")
    assert "--shallow" not in reading.answer
    assert ("git clone --shallow me/til", "unsupported") in [
        (s.text, s.verdict) for s in reading.specifics
    ]


def test_a_sentence_with_an_unsupported_specific_is_cut_and_reported() -> None:
    answer = (
        "Pass `--depth 1` to git clone [1]. "
        "The limit is NAMEDATALEN - 1, which is 64 by default [2]."
    )
    reading = read(answer, SOURCES, "How do I clone without history?")
    assert reading.answer == "Pass `--depth 1` to git clone [[clone-a-repo-just-for-the-files]]."
    assert reading.dropped_claims == ("The limit is NAMEDATALEN - 1, which is 64 by default  .",)
    assert ("64", "unsupported") in [(s.text, s.verdict) for s in reading.specifics]
    assert not reading.main_unsupported
    assert [c.ref for c in reading.citations] == ["[[clone-a-repo-just-for-the-files]]"]


def test_an_answer_whose_main_claim_is_unsupported_is_marked_so() -> None:
    reading = read(
        "Use `git clone --shallow` [1]. It skips the history [1].",
        SOURCES,
        "How do I clone without history?",
    )
    assert reading.main_unsupported
    assert reading.dropped_claims == ("Use `git clone --shallow`  .",)


def test_specifics_count_against_the_sources_the_whole_answer_cites() -> None:
    # The figure is in [2], cited by the other sentence: the answer cites it.
    reading = read("Names stop at 63 bytes. That is NAMEDATALEN - 1 [2].", SOURCES)
    assert reading.dropped_claims == () and reading.answer.startswith("Names stop at 63 bytes.")


def test_the_stream_holds_a_sentence_back_from_its_first_specific_until_checked() -> None:
    gate = ClaimGate(SOURCES)
    shown = [gate.feed(piece) for piece in ["Pass the ", "`--depth", " 1` flag ", "[1]. ", "It"]]
    assert shown == ["Pass the ", "", "", "", "`--depth 1` flag [1]."]
    assert gate.feed(" uses --shallow [1]. And then") == ""  # unsupported: never shown
    assert gate.finish() == " And then"


def test_a_streamed_reply_never_shows_an_unsupported_specific() -> None:
    reply = ReplyStream(SOURCES, "How do I clone without history?")
    text = (
        "".join(reply.feed(c) for c in "Run `git clone --depth 7` [1]. Done [1].") + reply.finish()
    )
    assert "--depth 7" not in text and "Done" in text
    reading = reply.read()
    assert "--depth 7" not in reading.answer and reading.main_unsupported


def test_an_uncited_answer_is_attributed_to_the_source_that_writes_what_it_says_to_type() -> None:
    """Small models often cite nothing; a sentence that gives the note's exact flag is that
    note's, however much of the question it repeats around it."""
    question = "What did I pass to clone to skip all the past commits of the repo?"
    reading = read(
        "To skip all the past commits, I passed `--depth 1` to clone.", SOURCES, question
    )
    assert reading.attributed
    [citation] = reading.citations
    assert citation.ref == "[[clone-a-repo-just-for-the-files]]"
    assert citation.support != "inference"


def test_a_compound_answer_keeps_the_part_that_holds_and_names_the_part_that_does_not() -> None:
    question = "Which flag clones without history, and how long can a table name be?"
    reading = read(
        "Pass `--shallow` to clone [1]. A name can be 63 bytes long [2].", SOURCES, question
    )
    assert not reading.main_unsupported
    assert reading.unanswered_parts == ("Which flag clones without history?",)
    assert reading.answer == "A name can be 63 bytes long [[max-identifier-length]]."


def test_a_simple_question_whose_answer_is_cut_is_not_answered_by_what_is_left() -> None:
    reading = read(
        "Pass `--shallow` to clone [1]. That is all.", SOURCES, "How do I clone shallowly?"
    )
    assert reading.main_unsupported


def test_a_note_title_written_as_the_command_to_type_is_not_held() -> None:
    """The header names the source; a small model that gives the file name as the command
    (`clone-a-repo-just-for-the-files`) has not read the note. Figures and names in the header
    still count (a date, a title's words)."""
    reading = read(
        "Run `clone-a-repo-just-for-the-files` [1].", SOURCES, "How do I clone the files only?"
    )
    assert reading.main_unsupported


def test_the_question_copied_into_the_answer_is_cut_without_a_verdict() -> None:
    question = "My clone is huge. What did I pass to clone to skip the history?"
    reading = read(
        "What did I pass to clone to skip the history? I passed `--depth 1` [1].",
        SOURCES,
        question,
    )
    assert reading.answer == "I passed `--depth 1` [[clone-a-repo-just-for-the-files]]."
    assert reading.dropped_claims == ()


def test_an_aside_with_the_only_unsupported_specific_goes_and_the_sentence_stays() -> None:
    reading = read(
        "Names stop at 63 bytes (as Tom Lane said) [2].", SOURCES, "How long can names be?"
    )
    assert reading.answer == "Names stop at 63 bytes [[max-identifier-length]]."
    assert not reading.main_unsupported


def test_a_specific_held_by_another_excerpt_of_the_cited_note_is_supported() -> None:
    # One note, two chunks shown: the sentence cites the one that names the library; the
    # angle is in the other. A citation names the note, so the sentence stands.
    script = source(1, "The script reads the sensor with `hidapi` (python bindings).", "lid-angle")
    run = ShownItem(
        item_id="c2",
        episode_id="ep1",
        ref="[[lid-angle]]",
        title="lid-angle",
        text="Opened as far as it could go, it printed `129`.",
    )
    runs = Source(2, run, run.text, tuple(segments(run.text)))
    other = source(3, "Opened the lid to 129 degrees.", "another-note")
    answer = "It reported 129, read with the `hidapi` library [1]."
    reading = read(answer, [script, runs], "What angle did it report, and with which library?")
    assert reading.dropped_claims == () and "129" in reading.answer
    reading = read(answer, [script, other], "What angle did it report, and with which library?")
    assert reading.main_unsupported  # another note's 129 does not count


def test_a_code_block_the_check_empties_goes_with_the_sentence_that_announced_it() -> None:
    answer = (
        "Install the gem [1]. You can do this by running the following command:\n\n"
        "```bash\n$ gem install --pre rexml\n```\n\nThen run it again [1]."
    )
    reading = read(answer, [source(1, "Install the gem, then run it again.", "rexml")], "How?")
    assert "```" not in reading.answer and "following command" not in reading.answer
    assert reading.answer.startswith("Install the gem [[rexml]].")
    assert reading.answer.endswith("Then run it again [[rexml]].")


def test_a_sentence_that_says_again_what_an_earlier_one_said_is_cut() -> None:
    notes = [source(1, "You can mix `it` with `_1` in one block? No: that is an error.", "it")]
    reading = read(
        "Mixing `it` with `_1` in one block is an error [1]. No, mixing `it` with `_1` in one "
        "block is an error [1].",
        notes,
        "Can I mix it with _1?",
    )
    assert reading.answer == "Mixing `it` with `_1` in one block is an error [[it]]."


def test_a_sentence_that_fills_a_slot_of_an_earlier_ones_template_is_cut() -> None:
    notes = [source(1, "Gord quoted $8,750 and was accepted; Harbourside quoted $8,200.", "porch")]
    reading = read(
        "Gord's quote was $8,750 [1]. Gord's quote was also more flexible, while Harbourside's "
        "quote was less flexible [1]. Gord's quote was also more reliable, while Harbourside's "
        "quote was less reliable [1].",
        notes,
        "Why did I pick Gord?",
    )
    assert "reliable" not in reading.answer and "flexible" in reading.answer
    # a step with a specific of its own is not a repeat
    steps = [source(1, "Run `go build` to compile, then `go install` to install.", "go")]
    reading = read(
        "Use the `go build` command to compile the modules [1]. Use the `go install` command "
        "to install the modules [1].",
        steps,
        "How do I build it?",
    )
    assert "`go install`" in reading.answer


def test_a_sentence_left_when_the_one_with_its_number_is_cut_still_shows_a_citation() -> None:
    question = "Which flag clones a repo without its history?"
    reading = read(
        "Pass `--depth 1` to clone without history. Then pass `--shallow` to be sure [1].",
        SOURCES,
        question,
    )
    assert reading.answer == (
        "Pass `--depth 1` to clone without history. [[clone-a-repo-just-for-the-files]]"
    )


def test_an_uncited_answer_shows_the_source_each_sentence_was_attributed_to() -> None:
    reading = read(
        "Identifiers are cut at 63 bytes. Clone with `--depth 1` to skip the history.",
        SOURCES,
        "How long can a name be, and how do I clone without history?",
    )
    assert reading.attributed
    assert reading.answer == (
        "Identifiers are cut at 63 bytes. [[max-identifier-length]] Clone with `--depth 1` to "
        "skip the history. [[clone-a-repo-just-for-the-files]]"
    )
