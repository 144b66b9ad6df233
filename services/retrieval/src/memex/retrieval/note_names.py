"""Notes named in a query, by title or alias (the graph channel's notes-as-entities).

In an Obsidian vault the people, places and projects are usually notes, not entity records:
"When's Shiv's birthday?" names the note "Siobhan Delorme" through its alias, as ``[[Shiv]]``
would link to it. A query that names a note by its title or an alias brings that note's own
chunks into the graph channel, so a vault with no entity records still has a graph.

Matching is by whole words, case-insensitive, over word n-grams: a query costs a few dict
lookups however many notes the vault holds (a regex alternation of every title would grow with
the vault).
"""

from __future__ import annotations

import re
import uuid

from memex.retrieval.store.base import Store
from memex.retrieval.store.keyword_terms import STOPWORDS

NOTE_NAMES_META = "note-names"
MAX_NAME_WORDS = 6
_WORD = re.compile(r"\w+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


class NoteNames:
    """Finds the notes whose title or an alias a text names."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        by_words: dict[tuple[str, ...], set[str]] = {}
        for note_id, note_names in names.items():
            for name in note_names:
                words = _words(name)
                if not words or len(words) > MAX_NAME_WORDS:
                    continue
                # A one-word name that is a function word or a single character ("A", "The")
                # would name a note in almost every query, and a bare number ("2025", a
                # document id) is an amount or a year in a question far more often than a name.
                word = words[0]
                if len(words) == 1 and (len(word) < 2 or word in STOPWORDS or word.isdigit()):
                    continue
                by_words.setdefault(words, set()).add(note_id)
        self._by_words = by_words
        self._longest = max((len(w) for w in by_words), default=0)

    def __call__(self, text: str) -> tuple[str, ...]:
        """Ids of the notes named in ``text``, sorted."""
        words = _words(text)
        found: set[str] = set()
        for start in range(len(words)):
            for size in range(1, min(self._longest, len(words) - start) + 1):
                found |= self._by_words.get(words[start : start + size], set())
        return tuple(sorted(found))


async def load(store: Store, tenant: str) -> NoteNames:
    """The tenant's note names: every note's title and aliases."""
    ids = sorted(note_id for note_id, _ in (await store.note_fingerprints(tenant)).values())
    metas = await store.get_notes(tenant, ids)
    return NoteNames({i: [m.title, *m.aliases] for i, m in metas.items()})


async def touch(store: Store, tenant: str) -> None:
    """Records that the tenant's notes changed, so searchers reload their names."""
    await store.set_meta(tenant, NOTE_NAMES_META, uuid.uuid4().hex)
