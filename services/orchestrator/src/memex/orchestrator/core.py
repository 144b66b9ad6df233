"""The orchestrator's shared machinery: reasoner info, retrieval steps, sensitivity, telemetry."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.audit import AuditedReasoner
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.items import Citation, ShownItem
from memex.orchestrator.persona import Persona, Personas
from memex.orchestrator.planner import Step
from memex.orchestrator.ports import Memory, ReasonerInfo, SearchSpec
from memex.orchestrator.store import OrchestratorStore

log = logging.getLogger(__name__)

PROMPT_VERSION = "2026-11-30.1"


@dataclass
class Context:
    """Everything a request needs, built once when the service starts."""

    settings: OrchestratorSettings
    store: OrchestratorStore
    memory: Memory
    reasoner: AuditedReasoner
    info: ReasonerInfo
    personas: Personas

    @property
    def hides_sensitive(self) -> bool:
        """Sensitive items are withheld from remote reasoners, and from local ones if so set."""
        return not self.info.local or not self.settings.local_sees_sensitive

    def withheld_note(self, count: int) -> str:
        """The emphasized note appended when sensitive items were withheld (SPEC B3)."""
        sources = "source" if count == 1 else "sources"
        where = "the cloud answer" if not self.info.local else "this answer"
        return f"_({count} sensitive {sources} withheld from {where}.)_"

    def split_sensitive(
        self, items: Sequence[ShownItem]
    ) -> tuple[list[ShownItem], list[ShownItem]]:
        """(items the model may see, items withheld)."""
        if not self.hides_sensitive:
            return list(items), []
        return [i for i in items if not i.sensitive], [i for i in items if i.sensitive]

    def search_spec(self, persona: Persona, query: str, k: int | None = None) -> SearchSpec:
        """A search shaped by the persona's channels, window and weights."""
        return SearchSpec(
            query=query,
            channels=tuple(persona.channels),
            k=k or persona.chunks,
            window_days=persona.time_window_days,
            include_contested=persona.include_contested,
            observation_weight=persona.observation_weight,
        )

    async def run_steps(
        self, tenant: str, steps: Sequence[Step], persona: Persona
    ) -> list[list[ShownItem]]:
        """Runs every plan step locally and concurrently; one ranked list per step."""

        async def run(step: Step) -> list[ShownItem]:
            if step.tool == "search_vault":
                return await self.memory.search(tenant, self.search_spec(persona, step.query))
            if step.tool == "query_records":
                return await self.memory.query_records(
                    tenant, step.collection, step.filters, "", persona.chunks
                )
            if step.tool == "person_timeline":
                return await self.memory.person_timeline(tenant, step.entity_id, persona.chunks)
            return await self.memory.list_inbox(tenant, persona.chunks)

        return list(await asyncio.gather(*(run(step) for step in steps)))

    async def record(
        self,
        *,
        tenant: str,
        kind: str,
        query: str,
        latency_ms: float,
        persona: str,
        items: Sequence[ShownItem],
        citations: Sequence[Citation] = (),
        grounding: float | None = None,
        abstained: bool = False,
        conversation_id: str | None = None,
        dropped_steps: Sequence[str] = (),
        answer: str = "",
    ) -> str:
        """Writes the telemetry turn and its retrieval rows (SPEC B12), off the event loop. An
        ask passes its ``answer``; it is kept with the refs of ``citations`` for replay."""
        cited = {c.item_id for c in citations}
        return await asyncio.to_thread(
            self.store.record_telemetry,
            tenant=tenant,
            kind=kind,
            query=query,
            latency_ms=latency_ms,
            model=self.info.model,
            persona=persona,
            prompt_version=PROMPT_VERSION,
            grounding_score=grounding,
            abstained=abstained,
            conversation_id=conversation_id,
            dropped_steps=dropped_steps,
            answer=answer,
            cited_refs=list(dict.fromkeys(c.ref for c in citations)),
            retrievals=[(i.item_id, i.score, i.channel_scores, i.item_id in cited) for i in items],
        )
