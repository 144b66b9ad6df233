"""Connection, schema, tenants and batched I/O of the Weaviate backend (see ``weaviate``); how a
call reaches a node, with retries on another, is in ``weaviate_calls``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self
from uuid import UUID

import weaviate
from weaviate.classes.config import Configure, ReplicationDeletionStrategy
from weaviate.classes.query import Filter
from weaviate.classes.tenants import Tenant
from weaviate.exceptions import UnexpectedStatusCodeError

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store.weaviate_calls import (
    _open_client,
    _reachable,
    closed_on_failure,
    mapped_errors,
)
from memex.retrieval.store.weaviate_leader import LEADER_WAIT, wait_for_leader
from memex.retrieval.store.weaviate_replication import (
    WATCH_INTERVAL,
    ReplicationPolicy,
    ReplicaWriteError,
    WeaviateNode,
)
from memex.retrieval.store.weaviate_schema import (
    CollectionSpec,
    collection_specs,
    inverted_index_config,
    vector_config,
    weaviate_tenant,
)
from memex.shared.errors import FailedPrecondition, Unavailable

if TYPE_CHECKING:
    from weaviate.collections.collection.async_ import CollectionAsync

log = logging.getLogger(__name__)

BATCH = 200  # objects per insert_many call: well under gRPC message limits at 384-1024 dims
ID_BATCH = 500  # ids per contains_any filter
MAX_RESULTS = 10_000  # Weaviate's default QUERY_MAXIMUM_RESULTS
# Matches no object: memex's object ids are UUIDv5 (``uuid_of``), never the nil UUID.
_NO_OBJECT = Filter.by_id().equal(UUID(int=0))


class WeaviateCollections:
    """A connected client (to one node of the cluster at a time), the four collections, and
    the tenants known to exist."""

    def __init__(
        self,
        client: weaviate.WeaviateAsyncClient,
        dimension: int,
        prefix: str,
        *,
        nodes: Sequence[WeaviateNode] = (),
        node: int = 0,
        api_key: str = "",
        timeout: float = 60.0,
        policy: ReplicationPolicy | None = None,
    ) -> None:
        self.dimension = dimension
        self.policy = policy or ReplicationPolicy()
        self._client = client
        self._nodes = list(nodes)
        self._node = node  # index in _nodes of the node _client talks to
        self._api_key = api_key
        self._timeout = timeout
        self._switch_lock = asyncio.Lock()
        self._retired: list[weaviate.WeaviateAsyncClient] = []  # clients of nodes left behind
        self._lost = asyncio.Event()  # set when the current node is given up
        self._settled = asyncio.Event()  # clear while a fail-over waits for a Raft leader
        self._settled.set()
        self._watch: asyncio.Task[None] | None = None
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
        failover: Sequence[WeaviateNode] = (),
        policy: ReplicationPolicy | None = None,
    ) -> Self:
        """Connects to the first node that answers (no init checks: no phoning home; readiness
        checked here), then creates the schema. ``failover`` lists the cluster's other nodes."""
        policy = policy or ReplicationPolicy()
        nodes = [WeaviateNode(http_host, http_port, grpc_port), *failover]
        policy.check_nodes(len(nodes))
        failure: Exception | None = None
        for index, node in enumerate(nodes):
            try:
                client = await _open_client(node, api_key, timeout)
            except Unavailable as exc:
                failure = exc
                continue
            store = cls(
                client,
                dimension,
                prefix,
                nodes=nodes,
                node=index,
                api_key=api_key,
                timeout=timeout,
                policy=policy,
            )
            async with closed_on_failure(client, f"Weaviate at {node}"):
                await store._ensure_schema()
            if len(nodes) > 1 and policy.retry_seconds > 0:
                store._watch = asyncio.create_task(store._watch_node())
            return store
        assert failure is not None
        raise failure

    async def close(self) -> None:
        """Closes the client's connections. Idempotent."""
        if not self._closed:
            self._closed = True
            if self._watch is not None:
                self._watch.cancel()
            for client in [*self._retired, self._client]:
                await client.close()

    async def _watch_node(self) -> None:
        """Gives up the current node once it refuses connections twice in a row, so calls
        move on within about a second instead of waiting for their own errors."""
        misses = 0
        while not self._closed:
            await asyncio.sleep(WATCH_INTERVAL)
            node = self._node
            if await _reachable(self._nodes[node]):
                misses = 0
                continue
            misses += 1
            if misses >= 2:
                log.warning("Weaviate node %s does not answer", self._nodes[node])
                misses = 0
                await self._fail_over(node)

    async def _fail_over(self, failed: int) -> None:
        """Moves to the node after ``failed``, unless a concurrent call already moved on. A node
        that does not answer now is left in place: the next try fails and moves on again."""
        if len(self._nodes) < 2:
            return
        async with self._switch_lock:
            if self._node != failed or self._closed:
                return
            self._node = (failed + 1) % len(self._nodes)
            self._settled.clear()
            self._lost.set()  # abandons the calls still running on the failed node
            self._lost = asyncio.Event()
            try:
                old = self._client
                # If this node does not answer either, keep the old client: the next call fails
                # on it and moves on again.
                with contextlib.suppress(Unavailable):
                    self._client = await _open_client(
                        self._nodes[self._node], self._api_key, self._timeout
                    )
                log.warning("Weaviate store now talks to %s", self._nodes[self._node])
                if old is not self._client:
                    # Closing it now would cancel the calls still running on it (a
                    # CancelledError in the caller); they fail or finish by themselves, and
                    # close() closes it.
                    self._retired.append(old)
                    # If the failed node led the Raft, this node may not know yet, and a write
                    # sent now would wait on the dead leader until it returns
                    # (weaviate_leader): hold every call until this node sees a live leader.
                    started = time.monotonic()
                    leader = await wait_for_leader(
                        self._nodes[self._node], self._api_key, LEADER_WAIT
                    )
                    log.warning(
                        "Weaviate Raft leader %s seen from %s after %.1fs",
                        leader or "(none yet)",
                        self._nodes[self._node],
                        time.monotonic() - started,
                    )
            finally:
                self._settled.set()

    # -- schema and tenants -----------------------------------------------------------------
    async def _ensure_schema(self) -> None:
        """Creates missing collections; an existing one is left as it is (idempotent, and safe
        when two processes race: the loser sees it exists), but it must be replicated as this
        store wants."""
        for spec in self._specs.values():
            if not await self._client.collections.exists(spec.name):
                try:
                    await self._create(spec)
                except UnexpectedStatusCodeError:
                    if not await self._client.collections.exists(spec.name):
                        raise
            await self._check_replication(spec)

    async def _check_replication(self, spec: CollectionSpec) -> None:
        config = await self._client.collections.use(spec.name).config.get()
        factor = config.replication_config.factor
        if factor != self.policy.factor:
            raise FailedPrecondition(
                f"Weaviate collection {spec.name} has replication factor {factor}, but this store "
                f"is configured for {self.policy.factor}; a collection's factor cannot change: "
                "use another MEMEX_RETRIEVAL_WEAVIATE_COLLECTION_PREFIX (and re-index), or the "
                "factor it was created with"
            )

    async def _create(self, spec: CollectionSpec) -> None:
        await self._client.collections.create(
            spec.name,
            properties=spec.properties,
            vector_config=vector_config(spec) if spec.vectors else None,
            inverted_index_config=inverted_index_config(),
            multi_tenancy_config=Configure.multi_tenancy(
                enabled=True, auto_tenant_creation=True, auto_tenant_activation=True
            ),
            replication_config=Configure.replication(
                factor=self.policy.factor,
                deletion_strategy=ReplicationDeletionStrategy.TIME_BASED_RESOLUTION,
            ),
        )
        log.info("created Weaviate collection %s (factor %d)", spec.name, self.policy.factor)

    def _col(self, kind: str, tenant: str) -> CollectionAsync[Any, Any]:
        """The tenant's collection at the read consistency level (``_insert``, ``_delete`` and
        ``_writing`` raise it to the write level)."""
        col = self._client.collections.use(self._specs[kind].name).with_tenant(tenant)
        return col.with_consistency_level(self.policy.read_level)

    def _writing(self, col: CollectionAsync[Any, Any]) -> CollectionAsync[Any, Any]:
        return col.with_consistency_level(self.policy.write_level)

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
        col = self._writing(col)
        for start in range(0, len(objects), BATCH):
            result = await col.data.insert_many(list(objects[start : start + BATCH]))
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise ReplicaWriteError(f"Weaviate rejected a write: {first.message}")
        if objects and any(s.vectors and s.name == col.name for s in self._specs.values()):
            await self._flush_vector_log(col)

    async def _flush_vector_log(self, col: CollectionAsync[Any, Any]) -> None:
        """Makes the vectors just written to ``col`` survive a crash of the server.

        Weaviate v1.39, indexing synchronously, flushes a shard's write-ahead logs when a batch
        is stored but before its vectors enter the HNSW index, whose log then sits in a memory
        buffer until the shard's next write. ``kill -9`` in between loses those vectors from
        the index: the objects survive, and no vector search finds them again (seen in
        ``test_acknowledged_writes_survive_a_server_kill``). A batch delete flushes every log
        after it runs, so a delete that matches nothing, on every replica, is the flush."""
        await col.data.delete_many(where=_NO_OBJECT)

    async def _delete(self, col: CollectionAsync[Any, Any], where: Any) -> int:
        """Deletes every match (looping past the per-call cap); returns how many went."""
        deleted, col = 0, self._writing(col)
        while True:
            result = await col.data.delete_many(where=where)
            if result.failed:
                raise ReplicaWriteError(f"Weaviate failed to delete {result.failed} objects")
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
