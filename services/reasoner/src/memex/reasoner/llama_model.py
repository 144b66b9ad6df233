"""What the llama.cpp engine (``llama_engine``) does with a loaded model, outside any one
generation: the GGUF's chat template as a formatter, checked grammars for JSON schemas, prompt
evaluation with logits for the last token only, and the prefill speed measured as the model loads.

Kept apart from ``llama_engine``, which holds the pool of contexts, the worker threads and the
prompt cache; these functions keep no state but the grammar cache.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_grammar import LlamaGrammar

from memex.reasoner.speculative import DraftingLlama
from memex.shared.errors import InvalidArgument

# Used only for a GGUF that carries no chat template of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

PREFILL_TIMINGS = 2  # timed evaluations of the prose below at load, after one to warm up
PREFILL_SAMPLE_TOKENS = 128  # a real prompt that evaluates this many updates the speed
# English prose to time prompt evaluation by, when the model loads.
_WARMUP_TEXT = (
    "Notes from the week: the boiler was fixed on Tuesday after three visits, the allotment "
    "rent went up to fifty-five pounds, and the move to the new flat is booked for the middle "
    "of May. Remember to chase the deposit, book the van, and send the landlord the meter "
    "readings. The race went well; the second half was faster than the first. "
) * 3


def _prefill_rate(llm: llama_cpp.Llama, n_batch: int) -> float:
    """Prompt tokens per second on this machine: one batch of English prose evaluated once to
    warm the model up (so the first real prompt is not slower than the rest), then timed
    ``PREFILL_TIMINGS`` times, the fastest kept. The first evaluation runs ~25% slower than the
    rest (Qwen2.5-Coder-1.5B on 2 cores: 46 against 59-67 tokens/s, and 60 for a 600-token
    prompt), and the stack starts its other services at the same moment: timed alone, the rate
    read 35-64 across restarts of one machine, and an ask's first pass is sized by it."""
    tokens = llm.tokenize(_WARMUP_TEXT.encode("utf-8"), add_bos=True)[: min(n_batch, 128)]
    fastest = 0.0
    for timing in range(PREFILL_TIMINGS + 1):
        started = time.perf_counter()
        _eval_prompt(llm, tokens)
        elapsed = time.perf_counter() - started
        llm.n_tokens = 0  # forget it: the KV cache starts empty for real prompts
        if timing and elapsed > 0:  # the first one only warms up
            fastest = max(fastest, len(tokens) / elapsed)
    return round(fastest, 1)


def _eval_prompt(llm: llama_cpp.Llama, tokens: Sequence[int]) -> None:
    """Evaluates prompt tokens with logits for the last one only, draft model or not."""
    if isinstance(llm, DraftingLlama):
        llm.eval(tokens, all_logits=False)
    else:
        llm.eval(tokens)


@functools.lru_cache(maxsize=64)
def _grammar_for(schema_json: str, vocab: Any) -> LlamaGrammar:
    """A checked llama.cpp grammar for a JSON schema (plan schemas repeat, so it is cached)."""
    try:
        grammar = LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except Exception as exc:
        raise InvalidArgument(
            f"json_schema cannot be turned into a llama.cpp grammar: {exc}"
        ) from None
    # llama.cpp returns NULL for a grammar it cannot parse; find out here rather than in sampling.
    sampler = llama_cpp.llama_sampler_init_grammar(
        vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    if not sampler:
        raise InvalidArgument("json_schema uses features the llama.cpp grammar cannot express")
    llama_cpp.llama_sampler_free(sampler)
    return grammar


def _chat_formatter(
    llm: llama_cpp.Llama, *, add_generation_prompt: bool = True
) -> Jinja2ChatFormatter:
    """The GGUF's own chat template (ChatML when it has none)."""
    model = llm._model
    eos, bos = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(
        template=llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE,
        eos_token=model.token_get_text(eos) if eos != -1 else "",
        bos_token=model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
        add_generation_prompt=add_generation_prompt,
    )
