"""Which things a text names: entity records by their names, notes by their titles and aliases.

Matching is by whole words, case-insensitive, over word n-grams: a text costs a few dict lookups
per word however many names there are. A regex alternation of every name, which this replaced,
grew with the names and ran over every chunk at index time and every query at search time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WORD = re.compile(r"\w+")

Words = tuple[str, ...]


def words(text: str) -> Words:
    """The text's words, case-folded: what a name and a text are compared by."""
    return tuple(_WORD.findall(text.casefold()))


class NameMatcher:
    """Finds the ids whose names a text holds as whole words.

    ``names`` maps an id to its names; ``accepts`` says which names (as words) may match at all,
    so a caller can leave out names that would match almost any text.
    """

    def __init__(
        self, names: dict[str, list[str]], accepts: Callable[[Words], bool] = bool
    ) -> None:
        self.names = names
        by_words: dict[Words, set[str]] = {}
        for owner, owner_names in names.items():
            for name in owner_names:
                name_words = words(name)
                if name_words and accepts(name_words):
                    by_words.setdefault(name_words, set()).add(owner)
        self._by_words = by_words
        self._longest = max((len(w) for w in by_words), default=0)

    def __call__(self, text: str) -> tuple[str, ...]:
        """Ids named in ``text``, sorted."""
        if not self._by_words:
            return ()
        text_words = words(text)
        found: set[str] = set()
        for start in range(len(text_words)):
            for size in range(1, min(self._longest, len(text_words) - start) + 1):
                found |= self._by_words.get(text_words[start : start + size], set())
        return tuple(sorted(found))
