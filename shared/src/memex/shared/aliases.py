"""A note's other names (frontmatter ``aliases``) as people use them. Retrieval keeps those a
note's title does not already say; the orchestrator names, in a source's header, those the
question uses. One whole-word rule for both, so "Chi" is never found inside "Chioma"."""

from __future__ import annotations

import re
from collections.abc import Sequence


def holds_words(text: str, words: str) -> bool:
    """Whether ``words`` occur in ``text`` as whole words, ignoring case ("Chi" is in "Who is
    Chi?" but not in "Chioma Okafor")."""
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text, re.IGNORECASE) is not None


def other_names(title: str, aliases: Sequence[str]) -> tuple[str, ...]:
    """The aliases a reader of ``title`` would not already see in it ("Chioma" adds nothing to
    "Chioma Okafor"; "Chi" and "my sister" do)."""
    return tuple(a for a in aliases if not holds_words(title, a))
