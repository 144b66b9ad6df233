"""Speculative decoding (``MEMEX_REASONER_SPECULATIVE``): the setting reaches every llama.cpp
context, and with the tests' real model prompt lookup drafts, keeps the greedy text, takes prompts
longer than a batch and keeps a JSON schema's grammar."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
import pytest
from llama_cpp.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding
from pydantic import ValidationError

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.engine import ChatMessage, Delta, Finished, GenerationRequest, Sampling
from memex.reasoner.factory import open_engine
from memex.reasoner.llama_engine import LlamaCppEngine

SYSTEM = (
    "You are a careful assistant for a personal notes vault. Answer only from the notes given. "
    "Notes: the boiler was fixed on Tuesday after three visits; the allotment rent went up to "
    "fifty-five pounds; the move to the new flat is booked for the middle of May; remember to "
    "chase the deposit, book the van, and send the landlord the meter readings. To restore the "
    "backup run `pg_restore -d my_new_database my_database.dump` after `createdb my_new_database`."
)
PROMPTS = (
    "Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river.",
    "What command restores the backup? Copy it from the notes.",
    "Write one sentence about tea.",
)
COPYING = PROMPTS[:2]  # what the reply copies from the prompt: drafts must keep it exactly


class Counting(LlamaDraftModel):
    """Counts the draft model's calls: one per decode step after the first token."""

    def __init__(self, inner: LlamaDraftModel) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        self.calls += 1
        return self.inner(input_ids, **kwargs)


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ReasonerSettings().speculative == "none"
    monkeypatch.setenv("MEMEX_REASONER_SPECULATIVE", "prompt-lookup")
    monkeypatch.setenv("MEMEX_REASONER_SPECULATIVE_DRAFT_TOKENS", "3")
    settings = ReasonerSettings()
    assert (settings.speculative, settings.speculative_draft_tokens) == ("prompt-lookup", 3)
    monkeypatch.setenv("MEMEX_REASONER_SPECULATIVE", "draft-model")
    with pytest.raises(ValidationError):
        ReasonerSettings()


async def _reply(engine: LlamaCppEngine, messages: tuple[ChatMessage, ...], **extra: Any) -> Any:
    request = GenerationRequest(
        messages=messages,
        sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=48, seed=1),
        **extra,
    )
    text, produced = "", 0
    async for event in engine.generate(request):
        if isinstance(event, Delta):
            text += event.text
        elif isinstance(event, Finished):
            produced = event.completion_tokens
    return text, produced


@pytest.mark.slow
def test_prompt_lookup_keeps_the_greedy_text_in_fewer_steps(model_path: Path) -> None:
    def settings(mode: str) -> ReasonerSettings:
        # n_batch 64: the system message alone is longer than a batch, which llama-cpp-python's
        # own draft-model eval could not take (memex.reasoner.speculative).
        return ReasonerSettings(
            model_path=model_path,
            context_length=512,
            n_batch=64,
            n_threads=1,  # two threads crawl while other work shares the cores
            max_active=1,
            speculative=mode,
            speculative_draft_tokens=3,
        )

    async def run() -> None:
        async with (
            open_engine(settings("none")) as plain,
            open_engine(settings("prompt-lookup")) as drafting,
        ):
            assert isinstance(plain, LlamaCppEngine) and isinstance(drafting, LlamaCppEngine)
            assert plain._llamas[0].draft_model is None
            lookup = drafting._llamas[0].draft_model
            assert isinstance(lookup, LlamaPromptLookupDecoding)
            assert lookup.num_pred_tokens == 3
            counting = Counting(lookup)
            drafting._llamas[0].draft_model = counting
            steps = produced = 0
            for prompt in PROMPTS:
                messages = (ChatMessage("system", SYSTEM), ChatMessage("user", prompt))
                expected, _ = await _reply(plain, messages)
                calls = counting.calls
                text, tokens = await _reply(drafting, messages)
                if prompt in COPYING:
                    assert text == expected, prompt
                else:
                    # A verify batch's logits can differ in the last bits from one-token steps
                    # (an AMD EPYC's: the tea sentence ended a sentence earlier), so free text
                    # may part from the greedy one at a near-tie; it starts the same.
                    shared = next(
                        (i for i, (a, b) in enumerate(zip(text, expected, strict=False)) if a != b),
                        min(len(text), len(expected)),
                    )
                    assert shared >= 40, (prompt, text, expected)
                steps += 1 + counting.calls - calls
                produced += tokens
            # Drafts were kept: fewer decode steps than tokens (the copying prompts).
            assert steps < produced

            schema = {
                "type": "object",
                "properties": {
                    "tool": {"enum": ["search_vault"]},
                    "query": {"type": "string", "maxLength": 20},
                },
                "required": ["tool", "query"],
            }
            text, _ = await _reply(
                drafting,
                (ChatMessage("user", "Return a JSON search for notes about the boiler."),),
                json_schema=schema,
            )
            jsonschema.validate(json.loads(text), schema)

    asyncio.run(run())
