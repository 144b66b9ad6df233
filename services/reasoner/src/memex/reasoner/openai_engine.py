"""Any OpenAI-compatible server (vLLM, Ollama, llama.cpp's servers, a cloud API), streamed.

The official ``openai`` SDK is the client, with its own retries off: a failure is retried here,
and only before the first token was streamed, since a retry after that would repeat text the
caller already has. HTTP statuses become domain errors once, in ``_error_for``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator
from typing import Any

import httpx2
import openai
from openai import Omit, omit
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONSchema
from pydantic import SecretStr

from memex.reasoner.engine import (
    ChatMessage,
    Delta,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
)
from memex.reasoner.schema import schema_instructions
from memex.shared import errors

log = logging.getLogger(__name__)

ENGINE_NAME = "openai-compatible"
# What "auto" tries, in order, until the server accepts one.
STRUCTURED_MODES = ("json_schema", "json_object", "prompt")
_FINISH: dict[str | None, FinishReason] = {"length": "length"}


class OpenAICompatibleEngine:
    """Streams chat completions from one model on an OpenAI-compatible server."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr,
        local: bool = False,
        context_length: int = 4096,
        structured_output: str = "auto",
        timeout_seconds: float = 120.0,
        connect_timeout_seconds: float = 5.0,
        retries: int = 2,
        backoff_seconds: float = 0.25,
        model_name: str = "",
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        """``http_client`` replaces the SDK's own (unit tests pass one with a mock transport)."""
        self._secret = api_key.get_secret_value()
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            # The SDK insists on a key; servers without auth ignore this placeholder.
            api_key=self._secret or "unused",
            max_retries=0,
            timeout=httpx2.Timeout(timeout_seconds, connect=connect_timeout_seconds),
            http_client=http_client,
        )
        self._base_url = base_url
        self._model = model
        self._timeout = timeout_seconds
        self._connect_timeout = connect_timeout_seconds
        self._retries = retries
        self._backoff = backoff_seconds
        modes = STRUCTURED_MODES if structured_output == "auto" else (structured_output,)
        self._modes = list(modes)
        name = model_name or model
        self.info = EngineInfo(
            engine=ENGINE_NAME,
            model=name,
            context_length=context_length,
            local=local,
            aliases=(name, model),
        )

    async def check(self) -> None:
        """Asks the server for its models once, to log early what is wrong. Never fails: a
        server that is down now may be up later, and calls say UNAVAILABLE meanwhile."""
        try:
            models = await self._client.models.list(timeout=self._connect_timeout)
        except openai.OpenAIError as exc:
            log.warning(
                "the model server at %s does not answer yet: %s",
                self._base_url,
                self._scrub(str(exc)),
            )
            return
        ids = [m.id for m in models.data]
        if self._model not in ids:
            log.warning(
                "the server at %s does not list model %r (it lists %s)",
                self._base_url,
                self._model,
                ", ".join(ids) or "none",
            )
        for m in models.data:
            # vLLM reports its context window; trust it over the setting.
            size = (m.model_extra or {}).get("max_model_len")
            if m.id == self._model and isinstance(size, int) and size > 0:
                self.info = EngineInfo(
                    engine=self.info.engine,
                    model=self.info.model,
                    context_length=size,
                    local=self.info.local,
                    aliases=self.info.aliases,
                )

    async def aclose(self) -> None:
        """Closes the HTTP connection pool."""
        await self._client.close()

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Streams the reply; closing the stream closes the HTTP response, which the server
        takes as a disconnect and stops generating."""
        attempt = 0
        streamed = False
        while True:
            retry_after = 0.0
            mode = self._modes[0] if request.json_schema is not None else None
            try:
                started = time.perf_counter()
                stream = await self._create(request, mode)
                prompt_tokens = completion_tokens = 0
                pieces = 0
                finish: FinishReason = "stop"
                async with stream:
                    async for chunk in stream:
                        if chunk.usage is not None:
                            prompt_tokens = chunk.usage.prompt_tokens
                            completion_tokens = chunk.usage.completion_tokens
                        if not chunk.choices:
                            continue
                        choice = chunk.choices[0]
                        if choice.delta.content:
                            streamed = True
                            pieces += 1
                            yield Delta(choice.delta.content)
                        if choice.finish_reason is not None:
                            finish = _FINISH.get(choice.finish_reason, "stop")
                log.debug("remote generation took %.3fs", time.perf_counter() - started)
                if not completion_tokens:
                    # The server reported no usage: one streamed piece is about one token, and a
                    # token about four characters of prompt.
                    completion_tokens = pieces
                    prompt_tokens = sum(len(m.content) for m in request.messages) // 4
                yield Finished(finish, prompt_tokens, completion_tokens)
                return
            except openai.APIStatusError as exc:
                if not streamed and mode is not None and self._format_rejected(exc, mode):
                    continue
                error = self._error_for(exc)
                retry_after = _retry_after(exc.response)
            except openai.APITimeoutError:
                raise errors.DeadlineExceeded(
                    f"the model server at {self._base_url} did not answer in time"
                ) from None
            except openai.APIConnectionError as exc:
                error = errors.Unavailable(
                    f"cannot reach the model server at {self._base_url}: "
                    f"{self._scrub(str(exc.__cause__ or exc))}"
                )
            except openai.APIError as exc:  # an error event inside the stream
                error = errors.Unavailable(f"the model server failed: {self._scrub(exc.message)}")
            retryable = isinstance(error, errors.Unavailable | errors.ResourceExhausted)
            if streamed or not retryable or attempt >= self._retries:
                raise error
            attempt += 1
            delay = min(self._backoff * 2**attempt, 4.0) * (0.5 + random.random())
            delay = max(delay, retry_after)
            if request.deadline is not None and time.monotonic() + delay >= request.deadline:
                raise error  # no time left to wait for a retry
            log.info("model server failed (%s); retry %d in %.2fs", error.message, attempt, delay)
            await asyncio.sleep(delay)

    async def _create(
        self, request: GenerationRequest, mode: str | None
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Starts one streamed chat completion (structured output as ``mode`` asks)."""
        sampling = request.sampling
        messages = list(request.messages)
        schema = request.json_schema
        response_format: ResponseFormatJSONSchema | Omit = omit
        extra_body: dict[str, Any] | None = None
        if schema is not None and mode == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": dict(schema), "strict": True},
            }
        elif schema is not None and mode == "json_object":
            # Not in the OpenAI API: how llama.cpp's servers and others take a schema.
            extra_body = {"response_format": {"type": "json_object", "schema": dict(schema)}}
        elif schema is not None:
            messages = _with_instructions(messages, schema_instructions(schema))
        return await self._client.chat.completions.create(
            model=self._model,
            messages=[_message(m) for m in messages],
            stream=True,
            stream_options={"include_usage": True},
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) if sampling.stop else omit,
            seed=sampling.seed if sampling.seed is not None else omit,
            response_format=response_format,
            extra_body=extra_body,
            timeout=self._budget(request),
        )

    def _budget(self, request: GenerationRequest) -> httpx2.Timeout:
        """The caller's remaining deadline, if sooner than the configured timeout."""
        timeout = self._timeout
        if request.deadline is not None:
            timeout = max(0.001, min(timeout, request.deadline - time.monotonic()))
        return httpx2.Timeout(timeout, connect=min(timeout, self._connect_timeout))

    def _format_rejected(self, exc: openai.APIStatusError, mode: str) -> bool:
        """Moves to the next structured-output mode when the server refused this one."""
        text = f"{exc.message} {exc.body}".lower()
        # Servers say it differently: 400 or 422, or even 500 (llama-cpp-python's server)
        # with a validation message naming the field.
        refused = "response_format" in text or (exc.status_code in (400, 422) and "schema" in text)
        if not refused or len(self._modes) < 2 or self._modes[0] != mode:
            return False
        log.warning("the model server refused response_format %s; trying %s", mode, self._modes[1])
        self._modes.pop(0)
        return True

    def _error_for(self, exc: openai.APIStatusError) -> errors.MemexError:
        status = exc.status_code
        detail = self._scrub(exc.message)[:500]
        where = f"the model server at {self._base_url}"
        if status == 429:
            return errors.ResourceExhausted(f"{where} is rate-limiting (429): {detail}")
        if status >= 500:
            return errors.Unavailable(f"{where} failed ({status}): {detail}")
        if status in (401, 403):
            return errors.FailedPrecondition(
                f"{where} refused the credentials ({status}); check MEMEX_REASONER_OPENAI_API_KEY"
            )
        if status == 404:
            return errors.NotFound(f"{where} does not serve model {self._model!r}: {detail}")
        if status in (400, 413, 422):
            return errors.InvalidArgument(f"{where} rejected the request ({status}): {detail}")
        return errors.Unavailable(f"{where} answered {status}: {detail}")

    def _scrub(self, text: str) -> str:
        """Removes the API key from anything that may reach a log or a client."""
        return text.replace(self._secret, "***") if self._secret else text


def _message(message: ChatMessage) -> ChatCompletionMessageParam:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "assistant":
        return {"role": "assistant", "content": message.content}
    return {"role": "user", "content": message.content}


def _with_instructions(messages: list[ChatMessage], instructions: str) -> list[ChatMessage]:
    if messages and messages[0].role == "system":
        first = ChatMessage("system", messages[0].content + "\n\n" + instructions)
        return [first, *messages[1:]]
    return [ChatMessage("system", instructions), *messages]


def _retry_after(response: httpx2.Response) -> float:
    """The server's Retry-After in seconds (capped at 10), or 0 when it gave none."""
    try:
        return min(max(float(response.headers.get("retry-after", 0)), 0.0), 10.0)
    except ValueError:  # an HTTP date: not worth parsing for a retry this short
        return 0.0
