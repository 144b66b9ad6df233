"""What to type, verbatim (issue 35): the note's own line for a command an answer names in part."""

from __future__ import annotations

from memex.orchestrator.answer.lexical import segments
from memex.orchestrator.answer.reading import read
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.answer.to_type import code_lines, line_to_type, lines_to_type
from memex.orchestrator.memory.items import ShownItem

CLONE = (
    "Using the `--depth` flag with `git-clone` clones a repo without its history.\n\n"
    "```bash\n$ git clone --depth 1 git@github.com:me/notes.git\n```\n\n"
    "See `man git-clone` for more details."
)
DASH = (
    "I made a directory called `-p` by mistake.\n\n```bash\n$ rmdir -p\nusage: rmdir [-p] "
    "directory ...\n```\n\nNot so fast.\n\n```\n$ rmdir -- -p\n```\n\n"
    "The `--` ends the options, so `-p` is read as a name."
)


def test_what_a_note_gives_to_type_is_its_prompt_lines_then_its_whole_command_spans() -> None:
    assert code_lines(CLONE) == [
        ("git clone --depth 1 git@github.com:me/notes.git", True),
        ("man git-clone", False),  # `--depth` alone is a name, not a line to type
    ]
    # A program's source and its output are read, not typed.
    source = "```ruby\nitems.each { puts it }\n> 12 | error\n```\n\nPress `<C-\\><C-n>`."
    assert code_lines(source) == [("<C-\\><C-n>", False)]


def test_a_flag_named_in_prose_gets_the_notes_whole_command() -> None:
    claim = "Use the `--depth` flag with `git-clone` and set it to `1`."
    # The fenced line and `man git-clone` each hold one piece: the block's line is the command.
    assert line_to_type(claim, CLONE, claim) == "git clone --depth 1 git@github.com:me/notes.git"


def test_a_command_the_answer_gets_slightly_wrong_is_shown_as_the_note_writes_it() -> None:
    claim = "Use the `rmdir` command with the `-p` flag."
    # `rmdir -p` is the answer's own reading (the note's mistake): it adds nothing to it.
    assert line_to_type(claim, DASH, claim) == "rmdir -- -p"


def test_a_command_the_answer_spells_out_in_prose_is_shown_as_one_line() -> None:
    claim = "Use the `rmdir` command with the `--` flag, so that `-p` is read as the name."
    assert line_to_type(claim, DASH, claim) == "rmdir -- -p"


def test_nothing_is_added_when_the_answer_writes_the_line_or_names_nothing_to_type() -> None:
    whole = "Run `rmdir -- -p` to remove it."
    assert line_to_type(whole, DASH, whole) == ""
    assert line_to_type("Remove the directory.", DASH, "Remove the directory.") == ""
    long_line = f"```\n$ rmdir {'x' * 130} -- -p\n```"
    assert line_to_type("Use `rmdir`.", long_line, "Use `rmdir`.") == ""


def test_at_most_two_lines_each_once_with_the_ref_of_the_source_that_holds_it() -> None:
    claims = [
        ("Use `--depth`.", [("[[clone]]", CLONE)]),
        ("Pass `--depth` again.", [("[[clone]]", CLONE)]),
        ("Use `rmdir`.", [("[[empty]]", "nothing here"), ("[[dash]]", DASH)]),
        ("Use `git-clone`.", [("[[clone]]", CLONE)]),
    ]
    assert lines_to_type(claims, "") == (
        ("git clone --depth 1 git@github.com:me/notes.git", "[[clone]]"),
        ("rmdir -- -p", "[[dash]]"),
    )


def test_a_read_answer_carries_the_line_of_the_source_it_cites() -> None:
    item = ShownItem(item_id="c1", episode_id="e1", ref="[[remove-dash-p]]", title="t", text=DASH)
    source = Source(1, item, DASH, tuple(segments(DASH)))
    reading = read("Use the `rmdir` command [1].", [source], "How do I delete a folder named -p?")
    assert reading.to_type == (("rmdir -- -p", "[[remove-dash-p]]"),)


def test_each_command_a_claim_names_gets_its_own_line() -> None:
    note = (
        "Pipe the array to `last`.\n\n```bash\n$ echo '[1,2,3]' | jq '. | last'\n```\n\n"
        "Or index it: `-1` is the last item.\n\n```bash\n$ echo '[1,2,3]' | jq '.[-1]'\n```\n\n"
        "My history is in `~/.jq_history`:\n\n```bash\n$ tail ~/.jq_history\n```"
    )
    claim = "Pipe it to the `last` function, or use an index with `-1` in `jq`."
    assert lines_to_type([(claim, [("[[last]]", note)])], claim) == (
        ("echo '[1,2,3]' | jq '. | last'", "[[last]]"),
        ("echo '[1,2,3]' | jq '.[-1]'", "[[last]]"),
    )
