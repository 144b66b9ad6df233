"""Notes named in a query, by title or alias (the graph channel's notes-as-entities).

In an Obsidian vault the people, places and projects are usually notes, not entity records:
"When's Shiv's birthday?" names the note "Siobhan Delorme" through its alias, as ``[[Shiv]]``
would link to it. A query that names a note by its title or an alias brings that note's own
chunks into the graph channel, so a vault with no entity records still has a graph.

Matching is ``names.NameMatcher``'s, with the names that would match almost any query left out.
"""

from __future__ import annotations

import uuid

from memex.retrieval.names import NameMatcher, Words
from memex.retrieval.store.base import MemoryReader, Store
from memex.retrieval.store.keyword_terms import STOPWORDS

NOTE_NAMES_META = "note-names"
MAX_NAME_WORDS = 6


def is_note_name(name: Words) -> bool:
    """Whether a title or alias (as words) may name its note in a query.

    A one-word name that is a function word or a single character ("A", "The") would name a note
    in almost every query, and a bare number ("2025", a document id) is an amount or a year in a
    question far more often than a name. Past six words a title is a sentence, not a name.
    """
    if len(name) > MAX_NAME_WORDS:
        return False
    word = name[0]
    return len(name) > 1 or not (len(word) < 2 or word in STOPWORDS or word.isdigit())


def matcher(names: dict[str, list[str]]) -> NameMatcher:
    """Finds the notes whose title or an alias a text names; ``names`` maps a note id to them."""
    return NameMatcher(names, is_note_name)


async def load(store: MemoryReader, tenant: str) -> NameMatcher:
    """The tenant's note names: every note's title and aliases."""
    ids = sorted(note_id for note_id, _ in (await store.note_fingerprints(tenant)).values())
    metas = await store.get_notes(tenant, ids)
    return matcher({i: [m.title, *m.aliases] for i, m in metas.items()})


async def touch(store: Store, tenant: str) -> None:
    """Records that the tenant's notes changed, so searchers reload their names."""
    await store.set_meta(tenant, NOTE_NAMES_META, uuid.uuid4().hex)
