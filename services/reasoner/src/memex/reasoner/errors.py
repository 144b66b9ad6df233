"""Errors particular to the reasoner service."""

from __future__ import annotations

from memex.shared.errors import FailedPrecondition, InvalidArgument


class ModelNotPrepared(FailedPrecondition):
    """The GGUF file is missing."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"reasoner model not found: {path} does not exist; run `make models` or set "
            "MEMEX_REASONER_MODEL_PATH to a GGUF file"
        )


class PromptTooLong(InvalidArgument):
    """The prompt (plus the requested completion) does not fit the context window."""

    def __init__(self, prompt_tokens: int, max_tokens: int, context_length: int) -> None:
        if prompt_tokens >= context_length:
            message = (
                f"the prompt is {prompt_tokens} tokens but the context holds {context_length}; "
                "shorten the messages"
            )
        else:
            message = (
                f"the prompt is {prompt_tokens} tokens and max_tokens is {max_tokens}, together "
                f"{prompt_tokens + max_tokens}, but the context holds {context_length}; shorten "
                "the messages or lower max_tokens"
            )
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length


class InvalidOutput(FailedPrecondition):
    """Structured output came back without matching the schema (only possible when the server
    could not constrain decoding and the prompt fallback was used). The text was streamed already;
    this status tells the caller not to trust it."""
