"""`POST /v1/chat/completions` and `GET /v1/models`: OpenAI's chat API backed by memex chat, so
existing OpenAI clients work unchanged.

Mapping (documented in docs/gateway.md):
- The last user message is the question (messages after it, such as an assistant prefill, are
  ignored); a request without a user message with text is a 400.
- With ``memex.conversation_id`` (OpenAI clients: ``extra_body={"memex": {...}}``), the reply
  continues that stored memex conversation, whose own history is the context; earlier messages
  in the request are then not sent again.
- Without it, a request whose earlier messages are exactly the history of a reply this gateway
  gave (the way OpenAI clients continue a chat: ``llm -c``, chat apps) continues that reply's memex
  conversation the same way, once (see ``memex.gateway.continuations``).
- Otherwise the request starts a new memex conversation, and earlier user and assistant messages
  are appended to the question as ``Earlier in this conversation:`` lines (newest kept first,
  within the message size limit). System messages are ignored: the persona's prompt governs.
- Each persona is a model, ``memex/<persona>``, and ``memex`` is the chat default persona; these
  are what ``GET /v1/models`` lists (from the orchestrator's ListPersonas, so personas from the
  personas folder are models too). Any other ``model`` is a 404 naming the ones there are.
  ``memex.persona`` in the request, when set, picks the persona instead of ``model``.
- ``memex.include_sensitive`` lets the reply use sensitive notes, under the read rule
  (``security.sensitive_grant``: a key granted it, or loopback without a key; else 403); by
  default they are withheld and counted in the extension's ``withheld``.
- ``memex.as_of`` (YYYY-MM-DD) has the reply read the memory as it stood at the end of that day
  (docs/as-of.md), for that request only.
  Sampling fields (temperature, max_tokens, ...) are accepted and ignored.
- Citations ride in the extension field ``memex`` {citations, withheld, conversation_id,
  message_id}: on the completion, and on the final chunk when streaming.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any

import grpc
from fastapi import APIRouter, Depends, Path, Request
from sse_starlette import ServerSentEvent

from memex.gateway import metrics
from memex.gateway.chat_stream import EventStream, open_chat, status_code
from memex.gateway.continuations import Continuations, Turn
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.disconnect import unless_disconnected
from memex.gateway.errors import ApiError, http_status, openai_type
from memex.gateway.models.chat import ChatCitations, ChatDone, ChatError, ChatMeta
from memex.gateway.models.common import MAX_TEXT, ErrorBody, ErrorDetail
from memex.gateway.models.openai_compat import (
    ChatCompletion,
    ChatCompletionRequest,
    CompletionChoice,
    CompletionMessage,
    MemexExtension,
    Model,
    ModelList,
    ModelPersona,
)
from memex.gateway.routes.chat import StreamResponse, ping, sse_schema
from memex.gateway.routes.personas import list_personas
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[Depends(caller)], responses=ERRORS)

STREAM_DOC = """With `stream: true`: `data:` frames of OpenAI `chat.completion.chunk` objects, the
last with `finish_reason: "stop"` and the `memex` extension, then `data: [DONE]`. A failure
after the first frame is a frame `{"error": {"code", "message"}}`."""


DEFAULT_MODEL = "memex"
MODEL_PREFIX = "memex/"
# A model's `created`: personas carry no date, so the time this gateway process started (stable
# across calls, which is what clients that cache the list need).
STARTED = int(time.time())


def served_models(personas: opb.ListPersonasResponse) -> dict[str, opb.Persona]:
    """Every model id served, in the order listed: "memex" (the chat default persona), then
    "memex/<persona>" for each persona, by name."""
    by_name = {p.name: p for p in personas.personas}
    served: dict[str, opb.Persona] = {}
    if personas.default_chat in by_name:
        served[DEFAULT_MODEL] = by_name[personas.default_chat]
    for persona in personas.personas:
        served[MODEL_PREFIX + persona.name] = persona
    return served


def unknown_model(model: str, served: Mapping[str, opb.Persona]) -> ApiError:
    """The 404 for a model memex does not serve, naming those it does."""
    return ApiError(
        grpc.StatusCode.NOT_FOUND,
        f"model {model!r} does not exist; memex serves {', '.join(served)} "
        "(GET /v1/models lists them)",
        param="model",
    )


def persona_of(body: ChatCompletionRequest, served: Mapping[str, opb.Persona]) -> str:
    """The persona: the extension's, else the one ``model`` names; empty for "memex", so the
    orchestrator applies its chat default. A model not in ``served`` is a 404."""
    if body.model not in served:
        raise unknown_model(body.model, served)
    if body.memex is not None and body.memex.persona:
        return body.memex.persona
    return "" if body.model == DEFAULT_MODEL else served[body.model].name


def model_entry(model_id: str, persona: opb.Persona) -> Model:
    """One served model in OpenAI's shape."""
    return Model(
        id=model_id,
        created=STARTED,
        memex=ModelPersona(persona=persona.name, description=persona.description),
    )


@router.get("/models", response_model=ModelList, summary="OpenAI-compatible model list")
async def list_models(c: ClientsDep) -> ModelList:
    """The models `model` takes in chat completions: `memex` (the chat default persona) and
    `memex/<persona>` for every persona."""
    served = served_models(await list_personas(c))
    return ModelList(data=[model_entry(i, p) for i, p in served.items()])


@router.get("/models/{model_id:path}", response_model=Model, summary="One OpenAI-compatible model")
async def get_model(
    c: ClientsDep,
    model_id: str = Path(description='e.g. "memex/analyst" (the slash may be sent as is).'),
) -> Model:
    """One model of the list; 404 for a model memex does not serve."""
    served = served_models(await list_personas(c))
    if model_id not in served:
        raise unknown_model(model_id, served)
    return model_entry(model_id, served[model_id])


def _question_at(body: ChatCompletionRequest) -> int:
    """Where the question is: the last user message with text (400 when there is none)."""
    users = [i for i, m in enumerate(body.messages) if m.role == "user" and m.plain_text().strip()]
    if not users:
        raise ApiError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "no user message with text: send the question as one",
            param="messages",
        )
    return users[-1]


def history_of(body: ChatCompletionRequest) -> list[Turn]:
    """The user and assistant messages with text, up to and including the question."""
    turns = [(m.role, m.plain_text().strip()) for m in body.messages[: _question_at(body) + 1]]
    return [(role, text) for role, text in turns if role in ("user", "assistant") and text]


def chat_message(body: ChatCompletionRequest) -> str:
    """The text sent to memex chat when no conversation is continued: the question, plus earlier
    turns (see the module docstring)."""
    at = _question_at(body)
    question = body.messages[at].plain_text().strip()
    room = MAX_TEXT - len(question) - 40
    earlier: list[str] = []
    for message in reversed(body.messages[:at]):
        text = message.plain_text().strip()
        if message.role not in ("user", "assistant") or not text:
            continue
        line = f"- {message.role}: {text}"
        if len(line) + 1 > room:
            break
        earlier.append(line)
        room -= len(line) + 1
    if not earlier:
        return question
    return question + "\n\nEarlier in this conversation:\n" + "\n".join(reversed(earlier))


def _chunk(
    cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def _collect(stream: EventStream) -> tuple[ChatMeta, str, MemexExtension]:
    """Reads a whole reply; a failure mid-reply is still an HTTP error (nothing was sent)."""
    meta = ChatMeta(conversation_id="", model="", persona="")
    parts: list[str] = []
    extension = MemexExtension(citations=[], withheld=0, conversation_id="")
    async for payload in stream.events():
        if isinstance(payload, ChatMeta):
            meta = payload
            extension.conversation_id = payload.conversation_id
        elif isinstance(payload, str):  # a delta: the reply's next piece
            parts.append(payload)
        elif isinstance(payload, ChatCitations):
            extension.citations, extension.withheld = payload.citations, payload.withheld
        elif isinstance(payload, ChatDone):
            extension.message_id = payload.message_id
        elif isinstance(payload, ChatError):
            raise ApiError(status_code(payload.code), payload.message)
    return meta, "".join(parts), extension


async def _chunks(
    stream: EventStream, on_done: Callable[[str, str], None]
) -> AsyncIterator[ServerSentEvent]:
    """The reply as OpenAI chunks; ``on_done(reply, conversation_id)`` once it is complete."""
    gauge = metrics.OPEN_STREAMS.labels("/v1/chat/completions")
    gauge.inc()
    created = int(time.time())
    cid = f"chatcmpl-{uuid.uuid4().hex}"
    model = "memex"
    extension = MemexExtension(citations=[], withheld=0, conversation_id="")
    parts: list[str] = []
    try:
        async for payload in stream.events():
            if isinstance(payload, ChatMeta):
                model = payload.model or model
                extension.conversation_id = payload.conversation_id
                chunk = _chunk(cid, created, model, {"role": "assistant", "content": ""})
            elif isinstance(payload, str):  # a delta
                parts.append(payload)
                chunk = _chunk(cid, created, model, {"content": payload})
            elif isinstance(payload, ChatCitations):
                extension.citations, extension.withheld = payload.citations, payload.withheld
                continue
            elif isinstance(payload, ChatDone):
                extension.message_id = payload.message_id
                on_done("".join(parts), extension.conversation_id)
                chunk = _chunk(cid, created, model, {}, "stop")
                chunk["memex"] = extension.model_dump()
            else:
                assert isinstance(payload, ChatError)
                # The error body of the route's other errors, OpenAI's type included.
                status = http_status(status_code(payload.code))
                detail = ErrorDetail(
                    code=payload.code, message=payload.message, type=openai_type(status)
                )
                yield ServerSentEvent(data=ErrorBody(error=detail).model_dump_json())
                return
            yield ServerSentEvent(data=json.dumps(chunk, ensure_ascii=False))
        yield ServerSentEvent(data="[DONE]")
    finally:
        gauge.dec()


@router.post(
    "/chat/completions",
    summary="OpenAI-compatible chat completion (memex chat underneath)",
    response_model=ChatCompletion,
    responses={
        200: {
            "description": "A chat.completion (JSON), or with stream: true an event stream. "
            + STREAM_DOC,
            "content": {"text/event-stream": {"schema": sse_schema(None)}},
        }
    },
)
async def chat_completions(
    c: ClientsDep,
    s: SettingsDep,
    tenant: TenantDep,
    body: ChatCompletionRequest,
    request: Request,
    who: Annotated[str, Depends(caller)],
) -> Any:
    """A memex chat reply in OpenAI's shape, with citations in the `memex` extension."""
    persona = persona_of(body, served_models(await list_personas(c)))
    history = history_of(body)
    continuations: Continuations = request.app.state.continuations
    explicit = body.memex.conversation_id if body.memex else ""
    include_sensitive = sensitive_grant(
        request, body.memex.include_sensitive if body.memex else False
    )
    continued = "" if explicit else continuations.take(who, history[:-1])
    chat_request = opb.ChatRequest(
        tenant=tenant,
        conversation_id=explicit or continued,
        # A continued conversation's own stored history is the context: only the question goes.
        message=history[-1][1] if explicit or continued else chat_message(body),
        persona=persona,
        include_sensitive=include_sensitive,
        as_of=body.memex.as_of if body.memex else "",
    )
    try:
        stream = await open_chat(c.orchestrator, chat_request, s.chat_timeout_seconds)
    except ApiError as exc:
        if not continued or exc.code != grpc.StatusCode.NOT_FOUND:
            raise
        # The remembered conversation was deleted since: start afresh, the history inlined.
        chat_request.conversation_id, chat_request.message = "", chat_message(body)
        stream = await open_chat(c.orchestrator, chat_request, s.chat_timeout_seconds)

    def remember(reply: str, conversation_id: str) -> None:
        continuations.remember(who, [*history, ("assistant", reply.strip())], conversation_id)

    if body.stream:
        return StreamResponse(
            _chunks(stream, remember),
            stream.cancel,
            ping=s.sse_ping_seconds,
            ping_message_factory=ping,
            sep="\n",
        )
    try:
        meta, text, extension = await unless_disconnected(request, _collect(stream), stream.cancel)
    finally:
        stream.cancel()
    remember(text, extension.conversation_id)
    return ChatCompletion(
        id=f"chatcmpl-{extension.message_id or uuid.uuid4().hex}",
        created=int(time.time()),
        model=meta.model or "memex",
        choices=[
            CompletionChoice(index=0, message=CompletionMessage(content=text), finish_reason="stop")
        ],
        memex=extension,
    )
