"""How the Weaviate backend reaches a node and runs a call on it: a connected client of one
node, whether a node answers at all, and ``mapped_errors``, which runs a store call again on
another node while a lost node explains the failure and turns what is left into domain errors.

Split from ``weaviate_base``, whose ``WeaviateCollections`` keeps the nodes, the current client
and the fail-over these functions drive.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import weaviate
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.exceptions import (
    UnexpectedStatusCodeError,
    WeaviateConnectionError,
    WeaviateStartUpError,
    WeaviateTimeoutError,
)

from memex.retrieval.store.weaviate_replication import (
    FIRST_BACKOFF,
    MAX_BACKOFF,
    WATCH_TIMEOUT,
    NodeLost,
    WeaviateNode,
    is_transient,
)
from memex.shared.errors import DeadlineExceeded, FailedPrecondition, Unavailable

if TYPE_CHECKING:
    from memex.retrieval.store.weaviate_base import WeaviateCollections

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound="WeaviateCollections")


def mapped_errors(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """Runs a store call, again on another node while a lost node explains the failure and the
    retry window lasts (``weaviate_replication``), and turns a lost or slow Weaviate into the
    domain errors clients understand."""

    @functools.wraps(method)
    async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        deadline: float | None = None
        backoff = FIRST_BACKOFF
        while True:
            if self.policy.retry_seconds > 0:
                await self._settled.wait()  # not while a fail-over waits for a Raft leader
            node, lost = self._node, self._lost
            try:
                if self.policy.retry_seconds <= 0:
                    return await method(self, *args, **kwargs)
                return await _unless_lost(method(self, *args, **kwargs), lost)
            except Exception as exc:
                if self.policy.retry_seconds <= 0 or not is_transient(exc):
                    raise _domain_error(exc) from exc
                now = time.monotonic()
                deadline = deadline or now + self.policy.retry_seconds
                if now >= deadline:
                    raise _domain_error(exc, retried=self.policy.retry_seconds) from exc
                log.warning("Weaviate call %s failed (%s); retrying", method.__name__, exc)
                await self._fail_over(node)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)

    return wrapper


async def _unless_lost(call: Coroutine[Any, Any, T], lost: asyncio.Event) -> T:
    """``call``, or NodeLost as soon as its node is given up. The client retries a refused
    connection by itself for up to a minute; a call stuck in those retries is abandoned here
    (and run again on another node by ``mapped_errors``)."""
    task = asyncio.ensure_future(call)
    # Retrieve a late failure of an abandoned call so asyncio does not log it as lost.
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    watcher = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
    if not task.done():
        raise NodeLost("the Weaviate node was given up while the call ran")
    return task.result()


async def _reachable(node: WeaviateNode) -> bool:
    """Whether ``node`` accepts a TCP connection on its gRPC port within WATCH_TIMEOUT."""
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(node.host, node.grpc_port), WATCH_TIMEOUT
        )
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _domain_error(exc: Exception, retried: float = 0.0) -> Exception:
    """The error a client sees: timeouts and lost connections as domain errors, the rest as is
    (after retries, every transient failure is Unavailable)."""
    if isinstance(exc, WeaviateTimeoutError):
        return DeadlineExceeded("the Weaviate store did not answer in time")
    if isinstance(exc, WeaviateConnectionError):
        return Unavailable("the Weaviate store is not reachable; is it running?")
    if retried:
        return Unavailable(f"the Weaviate cluster kept failing for {retried:.0f}s: {exc}")
    return exc


async def _open_client(
    node: WeaviateNode, api_key: str, timeout: float
) -> weaviate.WeaviateAsyncClient:
    """A connected client of ``node`` that answered its readiness probe, or Unavailable."""
    client = weaviate.use_async_with_custom(
        http_host=node.host,
        http_port=node.http_port,
        http_secure=False,
        grpc_host=node.host,
        grpc_port=node.grpc_port,
        grpc_secure=False,
        auth_credentials=Auth.api_key(api_key),
        skip_init_checks=True,
        additional_config=AdditionalConfig(
            timeout=Timeout(init=10, query=timeout, insert=timeout * 2)
        ),
    )
    where = f"Weaviate at {node.host}:{node.http_port}"
    async with closed_on_failure(client, where):
        try:
            await client.connect()
            if not await client.is_ready():
                raise Unavailable(f"{where} is not ready; is it still starting?")
        except (WeaviateConnectionError, WeaviateStartUpError) as exc:
            raise Unavailable(
                f"{where} is not reachable; start it with `memex up --store weaviate`"
            ) from exc
    return client


@contextlib.asynccontextmanager
async def closed_on_failure(
    client: weaviate.WeaviateAsyncClient, where: str
) -> AsyncIterator[None]:
    """Closes ``client`` when the block fails, so a store that never opened leaves no connection
    behind; a 401 from ``where`` becomes FailedPrecondition (the API key is wrong)."""
    try:
        yield
    except UnexpectedStatusCodeError as exc:
        await client.close()
        if exc.status_code == 401:
            raise FailedPrecondition(f"{where} refused the API key") from exc
        raise
    except BaseException:
        await client.close()
        raise
