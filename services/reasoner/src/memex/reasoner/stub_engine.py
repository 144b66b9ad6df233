"""The stub engine: deterministic output without a model, or a scripted replay.

Only ever used when MEMEX_REASONER_ENGINE=stub says so. A script is a JSON file::

    {"responses": [
      {"match": "plan", "chunks": ["{\\"steps\\"", ": []}"]},
      {"chunks": ["Hello", ", world"], "finish_reason": "length", "delay_ms": 20},
      {"chunks": ["partial"], "error": {"status": "UNAVAILABLE", "message": "gone",
                                         "after_chunks": 1}}
    ]}

A response with a ``match`` is used when that text occurs in the conversation; the others are
used in turn, in order, round and round. Chunks are streamed exactly as written, so tests of the
stages above can feed them any chunk boundaries (a marker split in two, say).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from memex.reasoner.engine import (
    Delta,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
)
from memex.reasoner.schema import example_instance
from memex.reasoner.text import StopMatcher
from memex.shared import errors
from memex.shared.errors import FailedPrecondition

ENGINE_NAME = "stub"

ERRORS: dict[str, type[errors.MemexError]] = {
    "INVALID_ARGUMENT": errors.InvalidArgument,
    "NOT_FOUND": errors.NotFound,
    "FAILED_PRECONDITION": errors.FailedPrecondition,
    "RESOURCE_EXHAUSTED": errors.ResourceExhausted,
    "UNAVAILABLE": errors.Unavailable,
    "DEADLINE_EXCEEDED": errors.DeadlineExceeded,
    "INTERNAL": errors.MemexError,
}


class ScriptedError(BaseModel):
    """An error the stub raises, before or after some chunks."""

    status: Literal[
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "FAILED_PRECONDITION",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "DEADLINE_EXCEEDED",
        "INTERNAL",
    ]
    message: str = "scripted error"
    after_chunks: int = Field(0, ge=0)


class ScriptedResponse(BaseModel):
    """One scripted reply."""

    match: str = ""
    chunks: list[str] = Field(default_factory=list)
    finish_reason: Literal["stop", "length"] = "stop"
    delay_ms: float | None = Field(None, ge=0)
    error: ScriptedError | None = None


class StubScript(BaseModel):
    """The file MEMEX_REASONER_STUB_SCRIPT points at."""

    responses: list[ScriptedResponse] = Field(min_length=1)


def load_script(path: Path) -> StubScript:
    """Reads and checks a script file; FailedPrecondition says what is wrong with it."""
    try:
        return StubScript.model_validate(json.loads(path.read_text()))
    except OSError as exc:
        raise FailedPrecondition(f"cannot read the stub script {path}: {exc.strerror}") from None
    except (ValueError, ValidationError) as exc:
        raise FailedPrecondition(f"the stub script {path} is not valid: {exc}") from None


class StubEngine:
    """Deterministic text: the same request always streams the same chunks."""

    def __init__(
        self,
        *,
        script: StubScript | None = None,
        delay_ms: float = 0.0,
        context_length: int = 4096,
        model_name: str = "",
    ) -> None:
        self._script = script
        self._delay_ms = delay_ms
        self._in_turn: Iterator[ScriptedResponse] | None = None
        if script is not None:
            unmatched = [r for r in script.responses if not r.match]
            self._in_turn = itertools.cycle(unmatched) if unmatched else None
        name = model_name or ("stub-script" if script else "stub")
        self.info = EngineInfo(
            engine=ENGINE_NAME,
            model=name,
            context_length=context_length,
            local=True,
            aliases=(name,),
        )

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Streams the scripted (or default) reply, honouring max_tokens and stop strings."""
        scripted = self._pick(request)
        prompt_tokens = sum(len(m.content.split()) + 4 for m in request.messages)
        if scripted is None:
            chunks, finish, delay_ms, error = self._default(request), "stop", self._delay_ms, None
        else:
            chunks, finish = list(scripted.chunks), scripted.finish_reason
            delay_ms = self._delay_ms if scripted.delay_ms is None else scripted.delay_ms
            error = scripted.error
        if prompt_tokens >= self.info.context_length:
            raise errors.InvalidArgument(
                f"the prompt is {prompt_tokens} tokens but the context holds "
                f"{self.info.context_length}; shorten the messages"
            )
        matcher = StopMatcher(request.sampling.stop)
        reason: FinishReason = finish  # type: ignore[assignment]
        produced = 0
        for index, chunk in enumerate(chunks):
            if error is not None and index == error.after_chunks:
                raise ERRORS[error.status](error.message)
            if produced >= request.sampling.max_tokens:
                reason = "length"
                break
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            produced += 1
            text, stopped = matcher.feed(chunk)
            if text:
                yield Delta(text)
            if stopped:
                reason = "stop"
                break
        else:
            if error is not None:
                raise ERRORS[error.status](error.message)
            tail = matcher.flush()
            if tail:
                yield Delta(tail)
        yield Finished(reason, prompt_tokens, produced)

    def _pick(self, request: GenerationRequest) -> ScriptedResponse | None:
        if self._script is None:
            return None
        conversation = "\n".join(m.content for m in request.messages)
        for response in self._script.responses:
            if response.match and response.match in conversation:
                return response
        if self._in_turn is None:
            raise errors.FailedPrecondition(
                "no scripted stub response matches this request and none is unconditional; "
                "add a response without 'match' to the stub script"
            )
        return next(self._in_turn)

    @staticmethod
    def _default(request: GenerationRequest) -> list[str]:
        if request.json_schema is not None:
            text = json.dumps(example_instance(request.json_schema))
            return [text[i : i + 8] for i in range(0, len(text), 8)]
        last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        words = f"Stub reply (no model is configured). You said: {last[:200]}".split()
        return [word + " " for word in words[:-1]] + words[-1:]
