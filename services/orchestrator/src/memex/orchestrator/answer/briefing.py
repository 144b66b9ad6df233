"""The briefing (SPEC B7): the instructions around the numbered sources (``answer/sources.py``).

The protocol is built for a 0.5-1.5B model: write prose, put a source's number after each fact.
No ids to copy, no JSON, no quotes to reproduce: memex grounds and grades the numbers itself
(``answer/``). The instructions come first and never change for a persona, so the reasoner's
prompt cache can keep them between calls.
"""

from __future__ import annotations

import datetime as dt

from memex.orchestrator.answer.question_parts import standalone
from memex.orchestrator.answer.sources import Source, render_all, spoken_date
from memex.orchestrator.memory import as_of
from memex.orchestrator.ports import ChatMessage
from memex.orchestrator.turn.persona import Persona

EMPTY_MEMORY_ANSWER = "There is nothing in the memory yet to answer from."
DECLINE = "I don't know."

ANSWER_RULES = f"""
How to answer:
- Use only the numbered sources in the user's message: excerpts from the person's own notes and
  records.
- Find the words in the sources that answer the question, and answer with those words, in one
  to three sentences. Answer every part of the question: a "why" needs its reason. Copy names,
  amounts, dates, times, versions and numbers exactly as the sources write them.
- When the question asks how to do something, give the exact command, code, keys or setting
  from the source, in `backticks`, exactly as the source writes it.
- Never add a name, number, version, command or setting that the sources do not write.
- Right after each fact, write the number of the source it comes from in square brackets,
  for example [2].
- If the sources do not contain the answer, reply only: {DECLINE}
""".strip()

# The last line a model reads before it answers. Measured on 8 questions about a real vault of
# code-heavy notes: without it, the 1.5B model cited a source by number in 1 answer of 8 (an
# answer in the style of a coding assistant); with it, in 6.
CITE_REMINDER = (
    "Answer in one to three sentences. End each sentence with the number of its source in "
    "square brackets, like this: ... [1]."
)

PART_REMINDER = (
    "Answer only what is still to answer, in one sentence, with the exact words, figures or "
    "commands your source gives, and end it with the number of that source in square brackets, "
    "like this: ... [1]. If no source answers it, say that the notes do not say."
)

CHAT_RULES = """
How to reply:
- Reply in plain prose, as yourself, to the person's latest message.
- Draw on the numbered sources in that message (excerpts from the person's own notes and
  records) where they help. Right after each fact you take from a source, write its number
  in square brackets, for example [3]. Write names, amounts and dates exactly as the sources
  write them.
- When the sources do not cover something, say you do not know rather than guessing.
""".strip()


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def today_line(today: dt.date | None = None) -> str:
    """``Today is Friday 4 December 2026.``: what "last week", "last year's review" and "how
    long ago" count from. It goes in the user's message, not the system prompt, so the system
    prompt stays one cached prefix. Where, was measured for each path with the 1.5B model: an
    ask reads it between the sources and the question (37 of 48 demo questions in two
    `memex eval` runs, 34 with it first); a chat reply reads it first, because next to the
    message the model read "£48 a year (rising to £55 for 2027)" as £55 in 8 of 8 samples."""
    day = today or as_of.today()  # an ask as of a day reads that day as today
    return f"Today is {_WEEKDAYS[day.weekday()]} {spoken_date(day.isoformat())}."


def system_prompt(persona: Persona, rules: str) -> str:
    """The fixed prefix of every call for ``persona``: who it is, then the rules."""
    return f"{persona.system_prompt.strip()}\n\n{rules}"


def answer_messages(
    persona: Persona, sources: list[Source], question: str, today: dt.date | None = None
) -> list[ChatMessage]:
    """The one call of a default ask: rules, then the sources, the date and the question."""
    return [
        ChatMessage("system", system_prompt(persona, ANSWER_RULES)),
        ChatMessage(
            "user",
            f"{render_all(sources)}\n\n{today_line(today)}\nQuestion: {question}\n" + CITE_REMINDER,
        ),
    ]


def part_messages(
    persona: Persona,
    sources: list[Source],
    question: str,
    answered: str,
    part: str,
    today: dt.date | None = None,
) -> list[ChatMessage]:
    """A call for one part of a compound question that the answer so far (``answered``) left
    out. Its prompt starts as the answer's did, question included, so the model reads only what
    follows: the answer so far, so that it is not given again, and the part. A part that is only
    a question word ("Why?") is asked instead as the question of its own ``standalone`` builds,
    without the answer so far, which the model otherwise writes again (``question_parts``)."""
    alone = standalone(part, question)
    if alone != part:
        return answer_messages(persona, sources, alone, today)
    return [
        ChatMessage("system", system_prompt(persona, ANSWER_RULES)),
        ChatMessage(
            "user",
            f"{render_all(sources)}\n\n{today_line(today)}\nQuestion: {question}\n"
            f"Answered so far: {answered}\nStill to answer: {part}\n" + PART_REMINDER,
        ),
    ]


def revise_messages(
    persona: Persona, sources: list[Source], question: str, draft: str, problems: str
) -> list[ChatMessage]:
    """A revise stage's call: the same sources, the draft, and what checking found."""
    return [
        ChatMessage("system", system_prompt(persona, ANSWER_RULES)),
        ChatMessage(
            "user",
            f"{render_all(sources)}\n\n{today_line()}\nQuestion: {question}\n\n"
            f"A draft answer:\n{draft}\n\n"
            f"Checking it found: {problems}\nWrite the answer again so every fact rests on a "
            "source and carries its number; leave out what no source supports.",
        ),
    ]


def chat_turn(sources: list[Source], message: str, today: dt.date | None = None) -> str:
    """The latest user message of a chat, with the date and its sources before it."""
    return f"{today_line(today)}\n\n{render_all(sources)}\n\n{message}"
