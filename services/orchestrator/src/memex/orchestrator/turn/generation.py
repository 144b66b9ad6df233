"""Generate and filter, the pipeline's model stage: one audited, streamed model call whose reply
is read through a ``ReplyStream`` as it arrives (SPEC B4, B9).

Shared by ask (its synthesize and revise calls) and chat. The reader sees only what the stream
lets through: ``<think>`` dropped, a ``@@CITATIONS@@`` tail kept apart, source numbers shown as
refs, and the call closed at the first repeated sentence. The sources' sensitive items are
named to the audit so their text never reaches the LLM log.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Sequence

from memex.orchestrator.answer.sources import Source, render
from memex.orchestrator.answer.streams import ReplyStream
from memex.orchestrator.memory.items import ShownItem
from memex.orchestrator.metrics import STAGE_SECONDS
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.record.audit import AuditedReasoner, StopGenerating
from memex.orchestrator.record.redaction import Sensitive, marker


def sensitive_in(sources: Sequence[Source], withheld: Sequence[ShownItem]) -> list[Sensitive]:
    """What of a call must not reach the LLM log: each sensitive source the model is shown (its
    block after the number, its excerpt, its whole text) and each item withheld from it."""
    found = []
    for source in sources:
        item = source.item
        if item.sensitive:
            block = render(source).removeprefix(f"[{source.number}] ")
            found.append(
                Sensitive(
                    marker(item.episode_id, item.item_id),
                    (block, source.excerpt, item.text),
                    source.number,
                )
            )
    found += [Sensitive(marker(i.episode_id, i.item_id), (i.text,)) for i in withheld]
    return found


class Generator:
    """Streams a model's reply through the audited reasoner and a ``ReplyStream``."""

    def __init__(self, reasoner: AuditedReasoner) -> None:
        self._reasoner = reasoner

    @property
    def model(self) -> str:
        """The model that writes (as the audit and telemetry name it)."""
        return self._reasoner.model

    async def stream(
        self,
        reply: ReplyStream,
        *,
        purpose: str,
        persona: str,
        messages: list[ChatMessage],
        options: GenerateOptions,
        withheld: Sequence[ShownItem],
        first_words: str = "",
        started: float | None = None,
    ) -> AsyncGenerator[str, None]:
        """The text the reader may see, as the model writes it; then ``reply.read()`` polices
        the whole. The first visible text is timed from ``started`` as stage ``first_words``
        (no ``started``: not timed, as for a revision)."""
        generated = self._reasoner.stream(
            purpose=purpose,
            persona=persona,
            messages=messages,
            options=options,
            sensitive_texts=sensitive_in(reply.sources, withheld),
        )
        # aclosing: when the caller goes away the model call is closed (and cancelled) now,
        # not whenever the garbage collector gets to it.
        async with contextlib.aclosing(generated):
            async for piece in generated:
                if text := reply.feed(piece):
                    if started is not None and text.strip():
                        STAGE_SECONDS.labels(first_words).observe(time.perf_counter() - started)
                        started = None
                    yield text
                if reply.looping:  # the model is repeating itself: stop it here, on purpose
                    with contextlib.suppress(StopAsyncIteration, StopGenerating):
                        await generated.athrow(StopGenerating())
                    break
        if text := reply.finish():
            yield text
