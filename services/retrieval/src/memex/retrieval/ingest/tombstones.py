"""Tombstones of forgotten notes, so re-indexing does not bring back what a person forgot.

A forget cannot delete the note's file (the vault is the person's, and may be synced elsewhere),
so the next ``memex index`` would read it again. A tombstone records the file's path and content
as two SHA-256 digests, never the path or text themselves (a forget must not keep what it
forgot), in one per-tenant metadata value. The indexer skips a file whose path and content match
a tombstone, and a file anywhere whose content is that of a forgotten file (moved, renamed or
copied unchanged); once the forgotten file changes, its tombstone is dropped and the note is
indexed again (the person wrote something new there). A deleted file keeps its tombstone,
harmlessly: if the same file comes back unchanged, it stays forgotten.
"""

from __future__ import annotations

import hashlib
import json

from memex.retrieval.store.base import Store

FORGOTTEN_META = "forgotten-notes"
VAULT_META = "vault-root"
"""The absolute vault folder of the tenant's last indexing run (to tell whether a forgotten
note's file is still there)."""
SKIP_REASON = "forgotten (`memex forget`); it is indexed again once the file changes"


def path_key(rel: str) -> str:
    """The tombstone key of a vault-relative path."""
    return hashlib.sha256(f"memex-forgotten-path:{rel}".encode()).hexdigest()


def content_key(text: str) -> str:
    """The tombstone value of a file's text."""
    return hashlib.sha256(f"memex-forgotten-text:{text}".encode()).hexdigest()


class Tombstones:
    """The tenant's tombstones during one indexing run."""

    def __init__(self, entries: dict[str, str]) -> None:
        self.entries = entries
        self.changed = False
        self._contents = set(entries.values())

    def skips(self, rel: str, text: str) -> bool:
        """Whether the file at ``rel`` with ``text`` stays forgotten (see the module doc). A
        forgotten path whose text changed loses its tombstone here (``changed`` is set)."""
        if not self.entries:
            return False
        key, content = path_key(rel), content_key(text)
        if key in self.entries and self.entries[key] != content:
            del self.entries[key]
            self._contents = set(self.entries.values())
            self.changed = True
        return content in self._contents


async def load(store: Store, tenant: str) -> dict[str, str]:
    """``{path_key: content_key}`` of the tenant's forgotten files."""
    raw = await store.get_meta(tenant, FORGOTTEN_META)
    return dict(json.loads(raw)) if raw else {}


async def save(store: Store, tenant: str, tombstones: dict[str, str]) -> None:
    """Replaces the tenant's tombstones (durable on return)."""
    await store.set_meta(tenant, FORGOTTEN_META, json.dumps(tombstones, sort_keys=True))
