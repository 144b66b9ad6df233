"""Connection, schema, tenants and batched I/O of the Weaviate backend (see ``weaviate``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, Self, TypeVar

import weaviate
from weaviate.classes.config import Configure
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.classes.tenants import Tenant
from weaviate.exceptions import (
    UnexpectedStatusCodeError,
    WeaviateConnectionError,
    WeaviateStartUpError,
    WeaviateTimeoutError,
)

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store.weaviate_schema import (
    CollectionSpec,
    collection_specs,
    inverted_index_config,
    vector_config,
    weaviate_tenant,
)
from memex.shared.errors import DeadlineExceeded, FailedPrecondition, Unavailable

if TYPE_CHECKING:
    from weaviate.collections.collection.async_ import CollectionAsync

log = logging.getLogger(__name__)

BATCH = 200  # objects per insert_many call: well under gRPC message limits at 384-1024 dims
ID_BATCH = 500  # ids per contains_any filter
MAX_RESULTS = 10_000  # Weaviate's default QUERY_MAXIMUM_RESULTS

P = ParamSpec("P")
T = TypeVar("T")


def mapped_errors(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Turns a lost or slow Weaviate into the domain errors clients understand."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(*args, **kwargs)
        except WeaviateTimeoutError as exc:
            raise DeadlineExceeded("the Weaviate store did not answer in time") from exc
        except WeaviateConnectionError as exc:
            raise Unavailable("the Weaviate store is not reachable; is it running?") from exc

    return wrapper


class WeaviateCollections:
    """A connected client, the four collections, and the tenants known to exist."""

    def __init__(self, client: weaviate.WeaviateAsyncClient, dimension: int, prefix: str) -> None:
        self.dimension = dimension
        self._client = client
        self._specs = collection_specs(prefix)
        self._tenants: set[str] = set()  # Weaviate tenants known to exist in every collection
        self._tenant_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def connect(
        cls,
        *,
        http_host: str,
        http_port: int,
        grpc_port: int,
        api_key: str,
        dimension: int,
        prefix: str = "Memex",
        timeout: float = 60.0,
    ) -> Self:
        """Connects (no init checks: no phoning home), checks readiness, creates the schema."""
        client = weaviate.use_async_with_custom(
            http_host=http_host,
            http_port=http_port,
            http_secure=False,
            grpc_host=http_host,
            grpc_port=grpc_port,
            grpc_secure=False,
            auth_credentials=Auth.api_key(api_key),
            skip_init_checks=True,
            additional_config=AdditionalConfig(
                timeout=Timeout(init=10, query=timeout, insert=timeout * 2)
            ),
        )
        where = f"Weaviate at {http_host}:{http_port}"
        try:
            await client.connect()
            if not await client.is_ready():
                raise Unavailable(f"{where} is not ready; is it still starting?")
            store = cls(client, dimension, prefix)
            await store._ensure_schema()
        except (WeaviateConnectionError, WeaviateStartUpError) as exc:
            await client.close()
            raise Unavailable(
                f"{where} is not reachable; start it with `memex up --store weaviate`"
            ) from exc
        except UnexpectedStatusCodeError as exc:
            await client.close()
            if exc.status_code == 401:
                raise FailedPrecondition(f"{where} refused the API key") from exc
            raise
        except BaseException:
            await client.close()
            raise
        return store

    async def close(self) -> None:
        """Closes the client's connections. Idempotent."""
        if not self._closed:
            self._closed = True
            await self._client.close()

    # -- schema and tenants -----------------------------------------------------------------
    async def _ensure_schema(self) -> None:
        """Creates missing collections; an existing one is left as it is (idempotent, and safe
        when two processes race: the loser sees it exists)."""
        for spec in self._specs.values():
            if await self._client.collections.exists(spec.name):
                continue
            try:
                await self._create(spec)
            except UnexpectedStatusCodeError:
                if not await self._client.collections.exists(spec.name):
                    raise

    async def _create(self, spec: CollectionSpec) -> None:
        await self._client.collections.create(
            spec.name,
            properties=spec.properties,
            vector_config=vector_config(spec) if spec.vectors else None,
            inverted_index_config=inverted_index_config(),
            multi_tenancy_config=Configure.multi_tenancy(
                enabled=True, auto_tenant_creation=True, auto_tenant_activation=True
            ),
        )
        log.info("created Weaviate collection %s", spec.name)

    def _col(self, kind: str, tenant: str) -> CollectionAsync[Any, Any]:
        return self._client.collections.use(self._specs[kind].name).with_tenant(tenant)

    async def _writable(self, tenant: str) -> str:
        """The Weaviate tenant of ``tenant``, created in every collection if needed."""
        name = weaviate_tenant(tenant)
        if name in self._tenants:
            return name
        async with self._tenant_lock:
            for spec in self._specs.values():
                tenants = self._client.collections.use(spec.name).tenants
                if not await tenants.exists(name):
                    with contextlib.suppress(UnexpectedStatusCodeError):
                        await tenants.create([Tenant(name=name)])
            self._tenants.add(name)
        return name

    async def _readable(self, tenant: str) -> str | None:
        """The Weaviate tenant of ``tenant``, or None when it has never been written."""
        name = weaviate_tenant(tenant)
        if name in self._tenants:
            return name
        for spec in self._specs.values():
            if not await self._client.collections.use(spec.name).tenants.exists(name):
                return None
        self._tenants.add(name)
        return name

    @mapped_errors
    async def delete_tenant(self, tenant: str) -> None:
        """Removes the tenant (all its shards) from every collection; idempotent."""
        name = weaviate_tenant(tenant)
        for spec in self._specs.values():
            tenants = self._client.collections.use(spec.name).tenants
            if await tenants.exists(name):
                await tenants.remove([name])
        self._tenants.discard(name)

    # -- low-level helpers ------------------------------------------------------------------
    async def _insert(self, col: CollectionAsync[Any, Any], objects: Sequence[Any]) -> None:
        for start in range(0, len(objects), BATCH):
            result = await col.data.insert_many(list(objects[start : start + BATCH]))
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise RuntimeError(f"Weaviate rejected a write: {first.message}")

    async def _delete(self, col: CollectionAsync[Any, Any], where: Any) -> int:
        """Deletes every match (looping past the per-call cap); returns how many went."""
        deleted = 0
        while True:
            result = await col.data.delete_many(where=where)
            if result.failed:
                raise RuntimeError(f"Weaviate failed to delete {result.failed} objects")
            deleted += result.successful
            if result.matches < MAX_RESULTS:
                return deleted

    async def _fetch(
        self, col: CollectionAsync[Any, Any], where: Any, props: list[str]
    ) -> list[dict[str, Any]]:
        reply = await col.query.fetch_objects(
            filters=where, limit=MAX_RESULTS, return_properties=props
        )
        return [dict(o.properties) for o in reply.objects]

    async def _fetch_ids(
        self, col: CollectionAsync[Any, Any], prop: str, ids: Iterable[str], props: list[str]
    ) -> list[dict[str, Any]]:
        wanted = sorted(set(ids))
        out: list[dict[str, Any]] = []
        for start in range(0, len(wanted), ID_BATCH):
            part = wanted[start : start + ID_BATCH]
            out += await self._fetch(col, codec.any_of(prop, part), props)
        return out

    async def _scan(
        self, col: CollectionAsync[Any, Any], props: list[str]
    ) -> AsyncIterator[dict[str, Any]]:
        async for obj in col.iterator(return_properties=props):
            yield dict(obj.properties)
