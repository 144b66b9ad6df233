"""What to type, verbatim (issue 35): the note's own line for a command the answer names in part.

Asked how to do something, a small model names the pieces of a command in prose ("use the
`--depth` flag with `git-clone` and set it to 1") or gets them slightly wrong ("`rmdir` with the
`-p` flag" for a note that writes ``rmdir -- -p``). The person needs the line they will type,
as the note writes it. So for each sentence that names something a person types (a code span, a
flag, a key, a path, an identifier), the cited source's code is searched for a longer line that
holds it and adds to what the answer writes: a line the note types at a shell prompt first, else
a code span of the note that is a whole command or keys. That line is shown after the answer,
with the source's ref. Nothing is made
up: the line is the note's, character for character.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memex.orchestrator.answer.claim_check import normal, occurs_in, specifics

TYPED_KINDS = frozenset({"code", "flag", "key", "path", "identifier"})
MAX_LINES = 2  # lines shown after one answer, at most
MAX_LINE_CHARS = 120  # longer is a listing, not a line to type

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
# A line typed at a shell prompt. (Not ">" or "#": they open output, quotes and comments too.)
_PROMPT = re.compile(r"^\s*[$%]\s+")
# A code span that is a command with its arguments, or keys to press, rather than one name.
_TYPED_SPAN = re.compile(r"\s|[<>~]")


def code_lines(text: str) -> list[tuple[str, bool]]:
    """What ``text`` gives to type, in order: the lines of its fenced code blocks typed at a
    shell prompt (the prompt dropped), marked True, then its inline code spans that hold a
    command with its arguments or keys to press, marked False. Other code (a program's source,
    its output, a config file) is read, not typed."""
    prompted = [
        (_PROMPT.sub("", line).strip(), True)
        for match in _FENCE.finditer(text)
        for line in match.group(2).splitlines()
        if _PROMPT.match(line)
    ]
    unfenced = _FENCE.sub(" ", text)
    spans = [
        (match.group(1).strip(), False)
        for match in _SPAN.finditer(unfenced)
        if _TYPED_SPAN.search(match.group(1).strip())
    ]
    return [(line, prompt) for line, prompt in [*prompted, *spans] if line]


def line_to_type(claim: str, excerpt: str, answer: str) -> str:
    """The line of ``excerpt`` that holds most of what ``claim`` gives to type, where ``answer``
    does not write it whole (it may write every piece of it in prose: "`rmdir` with the `--`
    flag ... `-p`" is not ``rmdir -- -p``); "" when there is none. Among equals, a prompt's
    line before a code span, and the longer line: it adds more."""
    found = _lines_to_type(claim, excerpt, answer)
    return found[0] if found else ""


def _lines_to_type(claim: str, excerpt: str, answer: str) -> list[str]:
    """``line_to_type``'s line, then the line that holds most of what the claim gives to type
    and that line does not, and so on: "pipe it to `last`, or index it with `-1`" names two
    commands, each its own line in the note. A later line must hold more than a bare word."""
    typed = [text for kind, text in specifics(claim) if kind in TYPED_KINDS]
    lines = [
        (line, prompted)
        for line, prompted in code_lines(excerpt)
        if len(line) <= MAX_LINE_CHARS and not occurs_in(line, answer)
    ]
    chosen: list[str] = []
    while typed:
        best: tuple[int, bool, int] | None = None
        line_held: tuple[str, list[str]] = ("", [])
        for line, prompted in lines:
            held = [t for t in typed if occurs_in(t, line) and normal(t) != normal(line)]
            rank = (len(held), prompted, len(line))
            if held and (best is None or rank > best):
                best, line_held = rank, (line, held)
        if best is None or (chosen and all(t.isalpha() for t in line_held[1])):
            break  # a later line for a bare word alone ("zsh" in "tail ~/.zsh_history") adds noise
        chosen.append(line_held[0])
        typed = [t for t in typed if t not in line_held[1]]
    return chosen


def lines_to_type(
    claims: Sequence[tuple[str, Sequence[tuple[str, str]]]], answer: str
) -> tuple[tuple[str, str], ...]:
    """For each claim (its text, and the ref and excerpt of each source it cites), the line to
    type its first cited source holds, with that source's ref: at most ``MAX_LINES``, each once."""
    found: dict[str, str] = {}
    for claim, cited in claims:
        for ref, excerpt in cited:
            lines = _lines_to_type(claim, excerpt, answer)
            for line in lines:
                found.setdefault(line, ref)
            if lines:
                break
    return tuple(found.items())[:MAX_LINES]
