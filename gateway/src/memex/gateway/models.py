"""Request and response bodies of the HTTP API, as published in its OpenAPI spec.

Field names are the proto field names; enums are lower-case words. Limits mirror the services'
own, so a request the gateway accepts is one the services can serve.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from memex.gateway.present import ChannelName, Citation, Record, SearchHit, Timeline

MAX_TEXT = 8000


def _integral(value: Any) -> Any:
    """JSON Schema's integer includes 42.0 but not false; pydantic's strict int is the other way
    round on the first, its lax int on the second."""
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_integral)]
Date = Annotated[str, Field(pattern=r"^(\d{4}-\d{2}-\d{2})?$", description="YYYY-MM-DD.")]
Role = Literal["unspecified", "user", "assistant"]
TurnState = Literal["unspecified", "pending", "thinking", "answered", "error"]


class Strict(BaseModel):
    """A request body: unknown fields are refused, so a typo is a 400, not a silent default, and
    types are not coerced (``"limit": false`` is an error, not 0)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# --- errors and health -------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(description="gRPC status name, e.g. NOT_FOUND or INVALID_ARGUMENT.")
    message: str = Field(description="What went wrong and what to change.")
    type: str | None = Field(
        None,
        description="OpenAI-compatible routes only (/v1/chat/completions, /v1/models): OpenAI's "
        "error type, e.g. invalid_request_error.",
    )
    param: str | None = Field(
        None, description="OpenAI-compatible routes only: the request field at fault, if one is."
    )


class ErrorBody(BaseModel):
    """Every error response."""

    error: ErrorDetail


class Health(BaseModel):
    """Shallow: the gateway answers. Deep: each stack service's health status name."""

    status: Literal["ok", "degraded"]
    services: dict[str, str] | None = Field(
        None, description="Deep checks only: service name to SERVING, NOT_SERVING, UNREACHABLE."
    )


# --- shared shapes -----------------------------------------------------------------------------


# --- ask, chat, search -------------------------------------------------------------------------


class AskRequest(Strict):
    question: str = Field(min_length=1, max_length=MAX_TEXT)
    persona: str = Field("", max_length=64, description="Empty: analyst.")
    limit: Int = Field(0, ge=0, le=50, description="Items sent to the answer; 0: the default (8).")
    include_sensitive: bool = Field(
        False,
        description="Let the answer use sensitive notes: needs a key granted it (or loopback, no "
        "key). Otherwise they are withheld from the model and counted in `withheld`.",
    )
    stream: bool = Field(
        False,
        description="true: server-sent events (started, delta..., result) instead of one JSON "
        "answer, so the first words show while the model writes.",
    )
    as_of: Date = Field(
        "",
        description="Answer from the memory as it stood at the end of this day (UTC), with it as "
        '"today"; empty: now. A day after today is a 400 (docs/as-of.md).',
    )


class CheckedSpecific(BaseModel):
    text: str = Field(description="A specific as the answer wrote it.")
    kind: str = Field(description="code, flag, identifier, key, path, version, figure or name.")
    verdict: str = Field(
        description='"supported" (a cited source holds it), "restated" (the question writes '
        'it) or "unsupported".'
    )
    ref: str = Field(description="The cited source that holds it; empty when unsupported.")


class Grounding(BaseModel):
    cited: int = Field(description="Citations the model gave.")
    grounded: int = Field(description="Citations kept after grounding.")
    score: float = Field(description="grounded / cited; 0 when nothing was cited.")
    dropped: list[str] = Field(description="Refs dropped because they named nothing shown.")
    specifics: list[CheckedSpecific] = Field(
        default_factory=list,
        description="The claim check: every specific the answer stated, with its verdict.",
    )
    dropped_claims: list[str] = Field(
        default_factory=list,
        description="Sentences cut because a specific of theirs is in no cited source.",
    )


class AskResponse(BaseModel):
    answer: str
    citations: list[Citation]
    persona: str
    grounding: Grounding
    abstained: bool
    stages: list[str] = Field(description='Stages that ran, e.g. ["plan", "retrieve", ...].')
    reframed_question: str
    opinion: str = Field(description="An opinion the model offered, apart from the answer.")
    withheld: int = Field(
        description="Sensitive items held back from the model: the request did not set "
        "include_sensitive, or the reasoner is remote."
    )
    model: str
    latency_ms: float
    turn_id: str
    as_of: str = Field("", description='The day whose memory answered; "" for now.')


class AskStarted(BaseModel):
    """`event: started`, first event of a streamed ask: the sources are chosen."""

    model: str
    persona: str
    sources: list[str] = Field(
        description='Refs of the sources briefed to the model, e.g. "[[Flat Deposit]]".'
    )
    source_paths: list[str] = Field(
        default_factory=list,
        description='The vault path of each source\'s note, in the same order; "" for a record.',
    )


class AskRedraft(BaseModel):
    """`event: redraft`, at most once in a streamed ask: the draft so far is set aside. Either
    the best sources, read first, did not answer the question and the model now reads all of
    them, or it read all of them and answered otherwise (other notes or figures); the deltas
    that follow start a new draft."""

    reason: str = Field(description='In words a person can read: "reading all 8 sources".')


class ChatRequest(Strict):
    message: str = Field(min_length=1, max_length=MAX_TEXT)
    conversation_id: str = Field("", max_length=128, description="Empty: a new conversation.")
    persona: str = Field("", max_length=64, description="Empty: friend.")
    include_sensitive: bool = Field(
        False,
        description="Let the answer use sensitive notes: needs a key granted it (or loopback, no "
        "key). Otherwise they are withheld from the model and counted in `withheld`.",
    )


class ChatMeta(BaseModel):
    """`event: meta`, first."""

    conversation_id: str
    model: str
    persona: str


class ChatDelta(BaseModel):
    """`event: delta`, many: the next piece of the reply (of a streamed ask: of the unchecked
    draft)."""

    text: str


class ChatCitations(BaseModel):
    """`event: citations`, once, after the last delta."""

    citations: list[Citation]
    withheld: int


class ChatDone(BaseModel):
    """`event: done`, terminal."""

    message_id: str
    latency_ms: float
    chunks_considered: int


class ChatError(BaseModel):
    """`event: error`, terminal, in place of the rest of a stream (chat or ask)."""

    code: str
    message: str


class SearchRequest(Strict):
    query: str = Field(min_length=1, max_length=2000)
    limit: Int = Field(0, ge=0, le=100, description="Items to return; 0: the default.")
    persona: str = Field("", max_length=64, description="Persona whose search settings apply.")
    channels: list[ChannelName] = Field(
        default_factory=list, max_length=5, description="Empty: the persona's channels."
    )
    since: Date = Field("", description="Only items dated on or after; undated items drop out.")
    until: Date = Field("", description="Only items dated on or before.")
    tags: list[str] = Field(default_factory=list, max_length=16, description="All must hold.")
    collections: list[str] = Field(
        default_factory=list, max_length=16, description="Only records of these collections."
    )
    include_sensitive: bool = Field(
        False, description="Include sensitive items: needs a key granted it (or loopback, no key)."
    )
    as_of: Date = Field(
        "",
        description="Search the memory as it stood at the end of this day (UTC): the notes and "
        "records as they were then; empty: now. A day after today is a 400 (docs/as-of.md).",
    )


class SearchResponse(BaseModel):
    items: list[SearchHit]
    turn_id: str


# --- records -----------------------------------------------------------------------------------


class FieldFilter(Strict):
    """`field op value`; see the retrieval contract for the operators' meaning."""

    field: str = Field(min_length=1, max_length=128)
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte", "contains", "in"]
    value: Any = Field(description="Any JSON value; a list for `in`.")


class RecordsQuery(Strict):
    collection: str = Field(min_length=1, max_length=64)
    filters: list[FieldFilter] = Field(default_factory=list, max_length=32)
    sort: str = Field("", max_length=128, description='Field to sort by; "-field" descends.')
    limit: Int = Field(0, ge=0, le=1000, description="0: 50.")
    since: Date = Field("", description="Only records dated on or after.")
    until: Date = Field("", description="Only records dated on or before.")
    tags: list[str] = Field(default_factory=list, max_length=16, description="All must hold.")
    include_sensitive: bool = Field(
        False, description="Include sensitive records: needs a key granted it (or loopback)."
    )


class RecordsResponse(BaseModel):
    records: list[Record]


TimelineResponse = Timeline


class InboxResponse(BaseModel):
    items: list[Record]


# --- conversations -----------------------------------------------------------------------------


class Conversation(BaseModel):
    id: str
    title: str
    persona: str
    created_at: str
    updated_at: str
    message_count: int


class ConversationMessage(BaseModel):
    id: str
    role: Role
    text: str
    citations: list[Citation]
    model: str
    latency_ms: float
    created_at: str = Field(description="RFC 3339 UTC.")
    withheld: bool = Field(
        False,
        description="The reply drew on sensitive notes and the request did not set "
        "include_sensitive: its text is a placeholder and its citations are left out.",
    )


class ConversationList(BaseModel):
    conversations: list[Conversation]


class ConversationDetail(BaseModel):
    conversation: Conversation
    messages: list[ConversationMessage]


# --- queued chat (SPEC B13) --------------------------------------------------------------------


class Turn(BaseModel):
    id: str
    thread_id: str
    role: Role
    text: str
    citations: list[Citation]
    state: TurnState = Field(description="User turns only; assistant turns are answered.")
    error: str = Field(description="Failure message when state is error.")
    created_at: str
    withheld: bool = Field(
        False,
        description="An answer to a question that let the model see sensitive notes, read without "
        "include_sensitive: its text is a placeholder and its citations are left out.",
    )


class Thread(BaseModel):
    id: str
    title: str
    created_at: str


class TurnCreate(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    thread_id: str = Field("", max_length=128, description="Empty: a new thread.")
    include_sensitive: bool = Field(
        False,
        description="Let the answer use sensitive notes: needs a key granted it (or loopback, no "
        "key). Otherwise they are withheld from the model and counted in `withheld`.",
    )


class TurnResponse(BaseModel):
    turn: Turn


class ThreadList(BaseModel):
    threads: list[Thread]


class TurnList(BaseModel):
    turns: list[Turn]


class TurnEvent(BaseModel):
    """One `turn` event of GET /v1/threads/{thread_id}/events (issue 37)."""

    turn: Turn
    current: bool = Field(
        description="True for the turns sent first (the thread when the watch began); false for "
        "a turn sent again because it changed."
    )


class ThreadEnded(BaseModel):
    """The terminal `deleted` event of a thread's event stream: the thread was forgotten."""

    thread_id: str


class ThreadDeleted(BaseModel):
    """The receipt of a thread forget."""

    thread_id: str
    turns_deleted: int = Field(description="Questions and answers deleted with the thread.")
    turns_remaining: int = Field(description="Turns of the thread found afterwards; 0.")


# --- personas ------------------------------------------------------------------------------------


Channel = Literal["unspecified", "vector", "keyword", "graph", "beliefs", "observations"]


class Persona(BaseModel):
    """A persona ask and chat accept, as its file sets it (SPEC B6)."""

    name: str = Field(description="What `persona` takes in ask, chat and search, e.g. analyst.")
    description: str
    default_for_ask: bool = Field(description="An empty persona in ask means this one.")
    default_for_chat: bool = Field(description="An empty persona in chat means this one.")
    chunks: int = Field(description="Items briefed to the model.")
    channels: list[Channel] = Field(description="Retrieval channels searched.")
    time_window_days: int = Field(description="Only items this recent; 0: all time.")
    include_contested: bool
    observation_weight: float
    stages: list[str] = Field(description="Ask stages, in order.")
    model_calls: int = Field(description="Reasoner calls one ask makes, at most.")
    system_prompt: str = Field(description="The persona's instructions to the model.")


class PersonaList(BaseModel):
    """Every persona, sorted by name: the built-ins and those in the personas folder."""

    personas: list[Persona]
    default_ask: str
    default_chat: str


# --- OpenAI-compatible chat completions --------------------------------------------------------


class ContentPart(BaseModel):
    model_config = ConfigDict(strict=True)

    type: str
    text: str = ""


class OpenAIMessage(BaseModel):
    model_config = ConfigDict(strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def plain_text(self) -> str:
        """The message's text (text parts joined; other parts ignored)."""
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content if p.type == "text")
        return self.content or ""


class MemexOptions(Strict):
    """Request extension `memex` (OpenAI clients: `extra_body={"memex": {...}}`)."""

    conversation_id: str = Field(
        "", max_length=128, description="Continue this memex conversation (its stored history)."
    )
    persona: str = Field("", max_length=64, description="Empty: friend.")
    include_sensitive: bool = Field(
        False,
        description="Let the answer use sensitive notes: needs a key granted it (or loopback, no "
        "key). Otherwise they are withheld from the model and counted in `withheld`.",
    )


class ChatCompletionRequest(BaseModel):
    """OpenAI's request. Sampling fields (temperature, max_tokens, ...) are accepted and ignored:
    memex's persona settings decide them."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field("memex", max_length=128)
    messages: list[OpenAIMessage] = Field(min_length=1, max_length=256)
    stream: bool = False
    memex: MemexOptions | None = None


class MemexExtension(BaseModel):
    """Response extension `memex`: what an OpenAI completion has no place for."""

    citations: list[Citation]
    withheld: int
    conversation_id: str
    message_id: str = ""


class CompletionMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class CompletionChoice(BaseModel):
    index: int
    message: CompletionMessage
    finish_reason: Literal["stop"]


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    memex: MemexExtension


class ModelPersona(BaseModel):
    """Extension `memex` of a model: the persona behind it."""

    persona: str
    description: str


class Model(BaseModel):
    """An OpenAI model object: one memex persona (``memex/<persona>``), or ``memex`` for the
    chat default."""

    id: str = Field(description='"memex" (the chat default persona) or "memex/<persona>".')
    object: Literal["model"] = "model"
    created: int = Field(description="Unix seconds: when this gateway started.")
    owned_by: str = "memex"
    memex: ModelPersona


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


# --- admin: API keys ---------------------------------------------------------------------------


class KeyCreate(Strict):
    name: str = Field(
        max_length=64, description="1-64 letters, digits, '.', '_' or '-'; unique per gateway."
    )
    tenant: str = Field(
        "",
        max_length=64,
        description="The only tenant the key sees: 1-64 letters, digits, '_' or '-'. Empty: the "
        "deployment's default tenant.",
    )
    sensitive: bool = Field(False, description="May read items marked sensitive when asked.")
    admin: bool = Field(False, description="May manage keys for any tenant (these routes).")


class KeyInfo(BaseModel):
    """A key without its secret."""

    name: str
    tenant: str = Field(description="Empty: the deployment's default tenant.")
    hint: str = Field(description="The token's first characters, to tell keys apart.")
    created_at: str
    sensitive: bool
    admin: bool


class KeyCreated(KeyInfo):
    token: str = Field(description="The bearer token: shown this once, never stored.")


class KeyList(BaseModel):
    keys: list[KeyInfo]
