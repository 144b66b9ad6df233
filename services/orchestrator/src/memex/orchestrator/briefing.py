"""The briefing (SPEC B7): how retrieved memory is shown to the model.

Each chunk is rendered with its provenance (episode id, date, title) under an Excerpts block, capped
at 1,600 characters; beliefs and observations get their own labelled blocks, so the model never
mistakes a derived conclusion or a connector record for the person's own words. The id in each
header is what the model cites.
"""

from __future__ import annotations

from collections.abc import Sequence

from memex.orchestrator.items import ShownItem

CHUNK_CHAR_CAP = 1600
EMPTY_MEMORY_NOTE = "(The memory is empty: there are no notes or records to draw on yet.)"
EMPTY_MEMORY_ANSWER = "There is nothing in the memory yet to answer from."


def cite_id(item: ShownItem) -> str:
    """The identifier the model is asked to cite for ``item``."""
    return item.episode_id or item.ref


def _cap(text: str) -> str:
    text = text.strip()
    if len(text) <= CHUNK_CHAR_CAP:
        return text
    return text[:CHUNK_CHAR_CAP].rsplit(" ", 1)[0] + " …"


def _header(item: ShownItem) -> str:
    date = f" ({item.date})" if item.date else ""
    title = f" {item.title}" if item.title else ""
    return f"episode {cite_id(item)}{date}{title}"


def render_items(items: Sequence[ShownItem]) -> str:
    """The Excerpts, Beliefs and Observations blocks, or the empty-memory note."""
    excerpts = [i for i in items if i.kind in ("chunk", "record")]
    beliefs = [i for i in items if i.kind == "belief"]
    observations = [i for i in items if i.kind == "observation"]
    blocks = []
    if excerpts:
        blocks.append(
            "Excerpts:\n\n" + "\n\n".join(f"{_header(i)}\n{_cap(i.text)}" for i in excerpts)
        )
    if beliefs:
        blocks.append(
            "Beliefs (conclusions derived from the notes, not the person's own words):\n"
            + "\n".join(f"- [{cite_id(i)}] {_cap(i.text)}" for i in beliefs)
        )
    if observations:
        blocks.append(
            "Observations (records from connected services, independent of the person's notes):\n"
            + "\n".join(
                f"- [{cite_id(i)}]{f' ({i.date})' if i.date else ''} {_cap(i.text)}"
                for i in observations
            )
        )
    return "\n\n".join(blocks) if blocks else EMPTY_MEMORY_NOTE


CHAT_FORMAT = """
Reply in plain prose. Then, on its own line, write @@CITATIONS@@ followed by a JSON array with one
object per source you relied on. Each object has "episode" (the id written after the word episode
in that excerpt's header), "quote" (words copied exactly from that excerpt) and "support"
("verbatim", "paraphrase" or "inference"). Write [] if you used none.
""".strip()

ANSWER_FORMAT = """
Answer the question from the excerpts only. Return JSON with "answer" (your answer in prose),
"citations" (one object per excerpt you used, with "episode": the id written after the word
episode in that excerpt's header, "quote": words copied exactly from it, "support": "verbatim",
"paraphrase" or "inference") and "opinion" (your own view, if any, kept apart from the answer).
If the excerpts do not answer the question, say so in "answer" and cite nothing.
""".strip()
