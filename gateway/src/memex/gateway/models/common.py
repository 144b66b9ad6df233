"""What the API's bodies share: the strict request base, integer, date, role and
sensitive-answer fields, the longest text a request may send, the error body every error answers
with, and the health check's answer. Each surface's models import these, never each other's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

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
# Whether an answer (ask, chat, a queued turn, the OpenAI extension) may draw on sensitive notes.
SensitiveAnswer = Annotated[
    bool,
    Field(
        description="Let the answer use sensitive notes: needs a key granted it (or loopback, no "
        "key). Otherwise they are withheld from the model and counted in `withheld`."
    ),
]


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
