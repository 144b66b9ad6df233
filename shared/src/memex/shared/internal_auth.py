"""Authentication between memex's own services (``MEMEX_INTERNAL_AUTH``), for servers and channels.

``none``: plaintext, for one machine where every service binds to loopback.
``token``: plaintext channels that send ``authorization: Bearer <MEMEX_INTERNAL_TOKEN>`` on every
call; servers refuse a call without it. For a network already private or encrypted by a mesh.
``mtls``: TLS both ways with certificates from one deployment CA (``memex certs``); a server
refuses any peer without a certificate that CA signed, before a call is read.

The standard health service answers without the token, as Kubernetes' gRPC probe sends none (it
reveals only SERVING or not). Under ``mtls`` no plaintext probe can connect at all, so the probe is
``python -m memex.shared.health ADDRESS``, which presents this process's certificate.
"""

from __future__ import annotations

import functools
import hmac
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import grpc
from pydantic import ValidationError

from memex.shared.metrics import INTERNAL_AUTH_REFUSED
from memex.shared.settings import InternalAuthSettings, describe_invalid

if TYPE_CHECKING:
    from memex.shared.interceptors import Continuation, Handler

TOKEN_HEADER = "authorization"
HEALTH_PREFIX = "/grpc.health.v1.Health/"
CERT_FILES = ("tls.crt", "tls.key", "ca.crt")


@functools.cache
def from_env() -> InternalAuthSettings:
    """This process's setting, read once from the environment. A bad setting ends the process
    with exit 2 and one line per problem, as every entry point does for its own settings."""
    try:
        return InternalAuthSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, InternalAuthSettings), file=sys.stderr)
        raise SystemExit(2) from None


def _read(auth: InternalAuthSettings) -> tuple[bytes, bytes, bytes]:
    assert auth.tls_dir is not None  # the settings' validator requires it for mtls
    cert, key, ca = (auth.tls_dir / name for name in CERT_FILES)
    return cert.read_bytes(), key.read_bytes(), ca.read_bytes()


def server_credentials(auth: InternalAuthSettings) -> grpc.ServerCredentials | None:
    """TLS that requires a client certificate from the deployment CA, under ``mtls``; else None
    (a plaintext port)."""
    if auth.auth != "mtls":
        return None
    cert, key, ca = _read(auth)
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=True
    )


def channel_credentials(auth: InternalAuthSettings) -> grpc.ChannelCredentials | None:
    """TLS presenting this process's certificate and trusting only the deployment CA, under
    ``mtls``; else None (a plaintext channel)."""
    if auth.auth != "mtls":
        return None
    cert, key, ca = _read(auth)
    return grpc.ssl_channel_credentials(
        root_certificates=ca, private_key=key, certificate_chain=cert
    )


def call_metadata(auth: InternalAuthSettings) -> tuple[tuple[str, str], ...]:
    """What every outbound call adds to its metadata: the token under ``token``, else nothing."""
    if auth.auth != "token" or auth.token is None:
        return ()
    return ((TOKEN_HEADER, f"Bearer {auth.token.get_secret_value()}"),)


def channel(
    address: str,
    auth: InternalAuthSettings,
    *,
    options: Sequence[tuple[str, Any]] | None = None,
    interceptors: Sequence[grpc.aio.ClientInterceptor] | None = None,
) -> grpc.aio.Channel:
    """A channel to ``address`` over this deployment's transport (TLS under ``mtls``)."""
    credentials = channel_credentials(auth)
    if credentials is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(address, credentials, options=options, interceptors=interceptors)


def server_interceptors(auth: InternalAuthSettings) -> list[grpc.aio.ServerInterceptor]:
    """The interceptors a server needs to enforce ``auth`` (the token check, under ``token``)."""
    if auth.auth != "token" or auth.token is None:
        return []
    return [TokenCheck(auth.token.get_secret_value())]


class TokenCheck(grpc.aio.ServerInterceptor):
    """Refuses, with UNAUTHENTICATED, every call that lacks the deployment's shared token."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        method = handler_call_details.method
        if method.startswith(HEALTH_PREFIX) or self._presented(handler_call_details):
            return await continuation(handler_call_details)
        INTERNAL_AUTH_REFUSED.labels(method).inc()
        return _refusal(handler_call_details)

    def _presented(self, details: grpc.HandlerCallDetails) -> bool:
        for key, value in details.invocation_metadata or ():
            if key == TOKEN_HEADER:
                sent = value.encode() if isinstance(value, str) else value
                return hmac.compare_digest(sent, self._expected)
        return False


def _refusal(details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any]:
    message = (
        f"{details.method} needs this deployment's internal credential: set the same "
        "MEMEX_INTERNAL_TOKEN in every memex process (MEMEX_INTERNAL_AUTH=token)"
    )

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    # A unary handler refuses stream methods too: it aborts before any message is read or sent.
    return grpc.unary_unary_rpc_method_handler(refuse)
