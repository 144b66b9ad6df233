"""Speculative decoding for the llama.cpp engine (``MEMEX_REASONER_SPECULATIVE``, off by default).

Prompt lookup (llama-cpp-python's ``LlamaPromptLookupDecoding``) drafts the next tokens by finding
the last tokens generated earlier in the context, prompt included, and proposing what followed
them there. An answer that copies a command or a sentence from its sources gets that text drafted,
and ``Llama.generate`` checks a whole draft in one decode step: it evaluates the sampled token and
the draft as one batch, samples at every position, and keeps the draft up to the first position
where the sample differs (the sample is kept there). Every token yielded is one the sampler chose
at its position, so sampled text follows the model's distribution, the seed's random draws are
used one per token as without a draft, and a grammar only ever sees kept tokens.

Greedy text is the same only up to rounding: llama.cpp's CPU kernels give a token evaluated inside
a batch logits up to ~0.4-0.8 apart from the same token evaluated alone (Qwen2.5-1.5B and
SmolLM2, AVX-512), so a near tie can go the other way (1 answer in 4 in
benchmarks/bench_speculative.py). And it pays only where a batch of tokens costs little more than
one: on 2 CPU cores a batch of k tokens cost about 0.75 k single steps, more than the drafts
saved (docs/models.md).

llama-cpp-python 0.3.36 needs one fix to use a draft model here: a draft model turns
``logits_all`` on, and ``Llama.eval`` then copies every evaluated token's logits into
``Llama.scores``, an array of ``n_batch`` rows unless ``logits_all`` was passed to the constructor
(then ``n_ctx`` rows: 2.5 GB for Qwen2.5's 152k-token vocabulary at 4096). Past ``n_batch``
tokens the copy fails ("could not broadcast"), so any prompt longer than one batch broke, and
every prompt token's logits would be computed (the output layer added 26% to a 9-token batch of
Qwen2.5-1.5B) only to be thrown away. ``DraftingLlama.eval`` leaves the logits in llama.cpp,
where the sampler reads them, and computes them for every token only in the verify batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import llama_cpp
from llama_cpp.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding

SpeculativeMode = Literal["none", "prompt-lookup"]

# The longest n-gram of the last tokens that a draft is looked up by (shorter ones are tried when
# it is not found): llama-cpp-python's default; 3 kept as many drafted tokens (24%) in the asks of
# benchmarks/bench_speculative.py and was no faster.
LOOKUP_NGRAM = 2


def draft_model(mode: SpeculativeMode, draft_tokens: int) -> LlamaDraftModel | None:
    """The draft model a context decodes with: none, or prompt lookup of ``draft_tokens``."""
    if mode == "none":
        return None
    return LlamaPromptLookupDecoding(max_ngram_size=LOOKUP_NGRAM, num_pred_tokens=draft_tokens)


class DraftingLlama(llama_cpp.Llama):
    """A ``llama_cpp.Llama`` whose ``eval`` never copies logits out of llama.cpp, for contexts
    with a draft model: ``generate``'s batches of a sampled token and its draft get logits for
    every token, and the engine's prompt batches pass ``all_logits=False``.
    """

    def eval(self, tokens: Sequence[int], all_logits: bool | None = None) -> None:
        """Evaluates ``tokens`` after the ``n_tokens`` already in the KV cache, ``n_batch`` at a
        time; logits for every token when ``all_logits`` (default: when a draft model is set),
        for the last one otherwise. Sampling reads them from llama.cpp (``Llama.scores`` stays
        unused: no logprobs are asked for)."""
        every = self._logits_all if all_logits is None else all_logits
        self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
        for i in range(0, len(tokens), self.n_batch):
            batch = tokens[i : i + self.n_batch]
            self._batch.set_batch(batch=batch, n_past=self.n_tokens, logits_all=every)
            self._ctx.decode(self._batch)
            self.input_ids[self.n_tokens : self.n_tokens + len(batch)] = batch
            self.n_tokens += len(batch)
            self._requires_eval = False
