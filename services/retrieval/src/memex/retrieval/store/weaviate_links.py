"""How the Weaviate backend finds notes by name and by link: the notes having a link key, the
note standing for each record, and the wikilink neighbourhood of notes. Each is a lookup of
note objects by a list property (``keys``, ``record_keys``, ``link_keys``) joined here.

Split from ``weaviate``, whose ``WeaviateStore`` methods of the same names call these.
"""

from __future__ import annotations

from collections.abc import Sequence

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store.base import NoteMeta
from memex.retrieval.store.weaviate_base import WeaviateCollections


async def notes_by_key(
    cols: WeaviateCollections, tenant: str, keys: Sequence[str]
) -> dict[str, list[NoteMeta]]:
    """Notes by link key, each list ordered by path."""
    name = await cols._readable(tenant)
    if name is None or not keys:
        return {}
    props = [*codec.NOTE_PROPS, "keys"]
    rows = await cols._fetch_ids(cols._col("note", name), "keys", keys, props)
    wanted, out = set(keys), dict[str, list[NoteMeta]]()
    for row in sorted(rows, key=lambda r: str(r["path"])):
        for key in set(row.get("keys") or ()) & wanted:
            out.setdefault(key, []).append(codec.note_meta(row))
    return out


async def notes_for_records(
    cols: WeaviateCollections, tenant: str, refs: Sequence[str]
) -> dict[str, NoteMeta]:
    """For each record ref, the note (smallest path) standing for it."""
    name = await cols._readable(tenant)
    if name is None or not refs:
        return {}
    rows = await cols._fetch_ids(cols._col("note", name), "record_keys", refs, codec.NOTE_PROPS)
    wanted, out = set(refs), dict[str, NoteMeta]()
    for row in sorted(rows, key=lambda r: str(r["path"])):
        for ref in set(row.get("record_keys") or ()) & wanted:
            out.setdefault(ref, codec.note_meta(row))
    return out


async def linked_notes(
    cols: WeaviateCollections, tenant: str, note_ids: Sequence[str]
) -> dict[str, set[str]]:
    """Outgoing links resolved through ``keys``, plus notes whose links name our keys."""
    name = await cols._readable(tenant)
    if name is None or not note_ids:
        return {}
    notes = cols._col("note", name)
    given = await cols._fetch_ids(notes, "note_id", note_ids, ["note_id", "keys", "link_keys"])
    targets = {k for row in given for k in row.get("link_keys") or ()}
    own_keys = {k for row in given for k in row.get("keys") or ()}
    props = ["note_id", "keys", "link_keys"]
    linked_to = await cols._fetch_ids(notes, "keys", targets, props) if targets else []
    linking = await cols._fetch_ids(notes, "link_keys", own_keys, props) if own_keys else []
    out: dict[str, set[str]] = {}
    for row in given:
        me, mine = str(row["note_id"]), set(row.get("keys") or ())
        links = set(row.get("link_keys") or ())
        found = {str(o["note_id"]) for o in linked_to if links & set(o.get("keys") or ())}
        found |= {str(o["note_id"]) for o in linking if mine & set(o.get("link_keys") or ())}
        out[me] = found - {me}
    return out
