"""Chat (SPEC B7, B8, B11): one streamed model call over the persona's retrieval, with history.

Events: ``meta``, many ``delta``, one ``citations`` (policed), ``done``; an error after the first
event becomes an ``error`` event in place of the tail. Both sides are stored; replies are never
ingested as memory.

The stages chat shares with ask (check, retrieve, brief, generate and filter, police, record) are
``turn/pipeline.py``'s; what is chat's own is here: the history, the conversation and the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace

from memex.orchestrator.answer import conflicts
from memex.orchestrator.answer.abstention import abstaining_answer
from memex.orchestrator.answer.briefing import CHAT_RULES, chat_turn, system_prompt
from memex.orchestrator.answer.streams import ReplyStream
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.conversation.conversations import ConversationStore
from memex.orchestrator.conversation.text import conversation_title
from memex.orchestrator.memory import as_of as as_of_day
from memex.orchestrator.memory.items import Citation
from memex.orchestrator.memory.policy import history_text
from memex.orchestrator.metrics import CHATS, DROPPED_CITATIONS, WITHHELD, timed
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.record.audit import conversation_var, tenant_var
from memex.orchestrator.turn.persona import Personas
from memex.orchestrator.turn.pipeline import Pipeline, checked, dated_search
from memex.orchestrator.turn.planner import Step

MAX_MESSAGE_CHARS = 8000
UNCHECKED_REPLY = "Nothing I drafted could be checked against your notes, so I have left it out."


@dataclass(frozen=True)
class Meta:
    conversation_id: str
    model: str
    persona: str
    as_of: str = ""  # the day whose memory the reply reads (YYYY-MM-DD), "" for now


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Citations:
    citations: list[Citation]
    withheld: int


@dataclass(frozen=True)
class Done:
    message_id: str
    latency_ms: float
    chunks_considered: int


ChatEvent = Meta | Delta | Citations | Done


class Chatter:
    """Runs chats: the shared pipeline, with the conversation's history and storage."""

    def __init__(
        self,
        settings: OrchestratorSettings,
        personas: Personas,
        pipeline: Pipeline,
        conversations: ConversationStore,
    ) -> None:
        self._settings = settings
        self._personas = personas
        self._p = pipeline
        self._conversations = conversations

    async def chat(
        self,
        tenant: str,
        conversation_id: str,
        message: str,
        persona_name: str = "",
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> AsyncGenerator[ChatEvent, None]:
        """Streams a reply. Errors before the first event raise; later ones become an Error.
        Sensitive notes reach the model only with ``include_sensitive`` (and a reasoner allowed
        them, ``Sensitivity``); otherwise they are withheld and counted. With ``as_of``
        (YYYY-MM-DD) the reply reads the memory as it stood at the end of that day; the
        conversation's history is the conversation's, whatever day each earlier reply read."""
        started = time.perf_counter()
        # check (before any event, so bad input is a plain error), then the conversation
        message = checked(
            message, name="message", hint="say something", max_chars=MAX_MESSAGE_CHARS
        )
        day = as_of_day.parse(as_of)
        as_of_day.as_of_var.set(day)  # every stage reads memory as of that day (docs/as-of.md)
        p = self._p
        persona = self._personas.get(persona_name, "chat")
        store = self._conversations
        tenant_var.set(tenant)  # every model call of this reply is logged as the tenant's
        if conversation_id:
            history = await asyncio.to_thread(
                store.recent_messages, tenant, conversation_id, self._settings.chat_history_messages
            )
        else:
            history = []
            conversation_id = await asyncio.to_thread(
                store.create_conversation, tenant, conversation_title(message), persona.name
            )
        conversation_var.set(conversation_id)  # its model calls go when the conversation does
        await asyncio.to_thread(store.add_message, tenant, conversation_id, "user", message)
        yield Meta(conversation_id, p.generator.model, persona.name, day.isoformat() if day else "")

        try:
            # retrieve
            with timed("chat_retrieve"):
                if dated := dated_search(message, message):
                    steps = (Step("search_vault", query=message), *dated)  # concurrently
                    fused = p.retriever.fuse(await p.retriever.run_steps(tenant, steps, persona))
                else:  # one list: the telemetry keeps retrieval's own scores
                    fused = await p.retriever.search(tenant, persona, message)
            shown, withheld = p.sensitivity.split(fused, include_sensitive=include_sensitive)
            # brief: the sources, the rules, the history, the message
            history = [
                replace(
                    m,
                    text=history_text(
                        m.text, drew_on_sensitive=m.sensitive, include_sensitive=include_sensitive
                    ),
                )
                for m in history
            ]
            sources = p.briefer.sources(
                shown,
                message,
                budget=p.briefer.chat_budget(message, history),
                limit=persona.chunks,
            )
            messages = [ChatMessage("system", system_prompt(persona, CHAT_RULES))]
            messages += [
                ChatMessage("user" if m.role == "user" else "assistant", m.text) for m in history
            ]
            messages.append(ChatMessage("user", chat_turn(sources, message)))
            # generate and filter
            streamed = ReplyStream(sources, message, said="\n".join(m.text for m in history))
            generated = p.generator.stream(
                streamed,
                purpose="chat",
                persona=persona.name,
                messages=messages,
                options=GenerateOptions(
                    max_tokens=self._settings.answer_max_tokens,
                    temperature=self._settings.chat_temperature,
                ),
                withheld=withheld,
                first_words="chat_first_token",
                started=started,
            )
            # aclosing: when the client goes away the model call is closed (and cancelled) now.
            with timed("chat_stream"):
                async with contextlib.aclosing(generated):
                    async for text in generated:
                        yield Delta(text)
            reading = streamed.read()  # police
            differ = conflicts.find(reading, sources, message)
            citations, report = conflicts.citations(differ, reading.citations), reading.report
            shown = [s.item for s in sources]
            DROPPED_CITATIONS.labels("chat").inc(len(report.dropped))
            WITHHELD.labels("chat").inc(len(withheld))
            reply = reading.answer
            if not reply.strip():
                # The claim check cut every sentence (a figure no source holds, say): a reply
                # that says so, never an empty one.
                reply = abstaining_answer(sources) if sources else UNCHECKED_REPLY
                yield Delta(reply)
            if differ:
                reply += conflicts.said(differ)
                yield Delta(conflicts.said(differ))
            if withheld:
                note = f"\n\n{p.sensitivity.withheld_note(len(withheld))}"
                reply += note
                yield Delta(note)
            yield Citations(citations, len(withheld))
            latency_ms = (time.perf_counter() - started) * 1000
            message_id = await asyncio.to_thread(
                store.add_message,
                tenant,
                conversation_id,
                "assistant",
                reply,
                citations,
                p.generator.model,
                latency_ms,
                sensitive=any(s.item.sensitive for s in sources),
            )
            # record
            await p.recorder.record(
                tenant=tenant,
                kind="chat",
                query=message,
                latency_ms=latency_ms,
                persona=persona.name,
                items=fused,
                citations=citations,
                grounding=report.score,
                abstained=not shown,
                conversation_id=conversation_id,
                report=report,
                answer=reply,
                sources=sources,
                message_id=message_id,
            )
            CHATS.labels("done").inc()
            yield Done(message_id, latency_ms, len(shown))
        except (GeneratorExit, asyncio.CancelledError):
            # The client went away: the user's message stays, no half reply is stored.
            CHATS.labels("cancelled").inc()
            raise
        except BaseException:
            # As an ask: the error ends the stream, after the events already sent, and the
            # server interceptor gives it its status (an unknown one becomes INTERNAL, logged).
            CHATS.labels("error").inc()
            raise
