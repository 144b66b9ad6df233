"""Storage backends behind one interface (``base.Store``); ``open_store`` picks one by setting."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from memex.retrieval.store.base import Store

if TYPE_CHECKING:
    from memex.retrieval.config import RetrievalSettings


@contextlib.asynccontextmanager
async def open_store(settings: RetrievalSettings, dimension: int) -> AsyncIterator[Store]:
    """Opens the configured backend for vectors of ``dimension`` and always closes it."""
    store: Store
    if settings.store == "embedded":
        from memex.retrieval.store.embedded import EmbeddedStore

        store = await EmbeddedStore.open(settings.store_dir, dimension)
    else:
        # Imported by name so the embedded default never needs the Weaviate client installed.
        weaviate = importlib.import_module("memex.retrieval.store.weaviate")
        store = await weaviate.open_weaviate_store(settings, dimension)
    try:
        yield store
    finally:
        await store.close()
