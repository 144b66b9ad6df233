"""Orchestrator settings (``MEMEX_ORCHESTRATOR_...``)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from memex.shared.settings import ServiceSettings, default_data_dir


class OrchestratorSettings(ServiceSettings):
    """Everything the orchestrator and its chat worker read from the environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_ORCHESTRATOR_")

    port: int = Field(50054, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    retrieval_addr: str = Field("127.0.0.1:50052", description="Address of the retrieval service.")
    reasoner_addr: str = Field("127.0.0.1:50053", description="Address of the reasoner service.")
    data_dir: Path = Field(
        default_factory=lambda: default_data_dir() / "orchestrator",
        description="Holds state.db (conversations, turns, telemetry, LLM log) on SQLite.",
    )
    state_url: SecretStr | None = Field(
        None,
        description="A PostgreSQL URL (postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE) for the "
        "state, shared by several orchestrators and chat workers on any machines; unset keeps "
        "it in SQLite at data_dir/state.db (one machine).",
    )
    state_pool_size: int = Field(
        8, ge=1, le=100, description="PostgreSQL connections each process may hold at once."
    )
    personas_dir: Path = Field(
        default_factory=lambda: default_data_dir() / "personas",
        description="User persona files (*.toml) added to, or replacing, the built-ins.",
    )
    default_tenant: str = Field("default", description="Tenant of requests that name none.")
    ask_limit: int = Field(8, ge=1, le=50, description="Items sent to the synthesize hop (top N).")
    rrf_k: int = Field(60, ge=1, description="Reciprocal Rank Fusion constant over plan steps.")
    chat_history_messages: int = Field(12, ge=0, description="Earlier messages briefed in chat.")
    local_sees_sensitive: bool = Field(
        True, description="Whether a local reasoner may see sensitive items (a remote one never)."
    )
    abstain_below: float = Field(
        0.5, ge=0, le=1, description="Abstain when less than this share of citations is grounded."
    )
    plan_hop: Literal["auto", "always", "never"] = Field(
        "auto",
        description="When ask runs the data-blind plan hop (a whole model call): auto runs it "
        "only for questions about records, the inbox, people's timelines or several things at "
        "once, and searches the question itself otherwise; always is SPEC B1's two-hop ask.",
    )
    search_record_collections: list[str] = Field(
        default=["events", "inbox", "entities"],
        description="Record collections that the model's own searches (an ask's, a chat's) cover "
        "alongside the notes, so that a question about an inbox item or an event finds it without "
        "the plan hop; each must be allowlisted in retrieval (MEMEX_RETRIEVAL_RECORD_COLLECTIONS)."
        " [] searches the notes only.",
    )
    plan_max_tokens: int = Field(160, gt=0, description="Token budget of the plan hop.")
    answer_max_tokens: int = Field(400, gt=0, description="Token budget of chat replies.")
    chat_temperature: float = Field(
        0.3,
        ge=0,
        le=2,
        description="Sampling temperature of chat replies. Low, because a small model sampled "
        "warm picks the wrong amount or date from its sources; ask answers greedily.",
    )
    ask_max_tokens: int = Field(
        200, gt=0, description="Token budget of an ask's answer (asked for in 1-3 sentences)."
    )
    briefing_tokens: int = Field(
        1000,
        ge=100,
        description="Prompt tokens the numbered sources may take (estimated at 3.2 characters a "
        "token); further capped so the sources, rules, question and answer fit the reasoner's "
        "context. Prefill of these tokens is most of a CPU model's time to first word.",
    )
    chat_first_words_seconds: float = Field(
        5.0,
        ge=0,
        description="Chat sizes its sources so the model can read its prompt in about this "
        "long, at the prefill speed the reasoner measured when it loaded (at least one short "
        "source; never more than briefing_tokens); 0 uses briefing_tokens whatever the speed.",
    )
    ask_first_pass_seconds: float = Field(
        3.5,
        ge=0,
        description="An ask first answers, streamed, from the best sources the model reads in "
        "about this long (at the prefill speed the reasoner measured when it loaded), so its "
        "first words come in about this long plus a second; then it reads the whole briefing, "
        "to confirm that answer (ask_confirm_first_pass) or because it did not rest on them. The "
        "whole briefing's start is the first pass's prompt, so that call reads only what was "
        "added. 0, or a speed the reasoner did not measure, reads the whole briefing at once.",
    )
    ask_confirm_first_pass: bool = Field(
        True,
        description="When an ask's first pass stands, the model still reads the whole briefing "
        "after it (unstreamed; the first prompt is its start, so only what was added is read): "
        "the draft is kept when that answer cites the same notes with the same figures, rests "
        "on its sources less well, or is broken without declining, and is replaced by it (a "
        "redraft) otherwise. A first pass that stood alone lost 5 of 48 demo questions to "
        "sources it had not read (another note's amount, the eighth source's figure), for ask "
        "p50 5.1 s against 8.3 s (docs/benchmarks.md). False: a first pass that stands is the "
        "answer.",
    )
    ask_first_pass_min_tokens: int = Field(
        300,
        ge=100,
        description="The fewest tokens of sources an ask's first pass reads, however slow the "
        "model: the first source's longer excerpt and one more, so that the draft the reader "
        "sees first has a fair chance of being the answer. On a slow CPU this makes the first "
        "words later rather than the draft poorer.",
    )
    excerpt_chars: int = Field(
        600,
        ge=100,
        le=1600,
        description="Longest excerpt of one item in a briefing: a longer chunk is cut to the "
        "window of its sentences that best matches the question (chunks are at most 1,600). "
        "600 (and 1,200 for the first source) showed every fact a right answer needs from its "
        "gold note for 50 of the til vault's 50 answerable questions, against 42 at 400 and "
        "800, for the same prompt tokens, and no fewer on the demo and second vaults "
        "(benchmarks/bench_briefing.py, docs/benchmarks.md).",
    )
    lead_excerpt_chars: int = Field(
        1200,
        ge=100,
        le=1600,
        description="Longest excerpt of the first source, which retrieval ranks best: more of it "
        "is shown, because the sentence that answers often shares no word with the question "
        '("How many kilometres..." against "Odometer: 99,870 km.") and is cut from a '
        "tighter window.",
    )
    reflect_nightly: bool = Field(
        True,
        description="The chat worker runs the learning loop (`memex reflect`, docs/reflect.md) "
        "once a night at reflect_at; never on a remote reasoner unless reflect_remote.",
    )
    reflect_at: str = Field(
        "03:30",
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="Local time (HH:MM) of the nightly reflect run.",
    )
    reflect_remote: bool = Field(
        False,
        description="Let the nightly run send notes to a remote reasoner (sensitive notes never "
        "go to one, whatever this says).",
    )
    reflect_days: int = Field(
        7, ge=0, description="Days of notes a reflect run reads when it names no since; 0: all."
    )
    reflect_max_episodes: int = Field(
        40, ge=1, le=200, description="Newest notes a reflect run reads at most."
    )
    reflect_batch_chars: int = Field(
        3600, ge=500, description="Characters of notes sent to the model in one reflect call."
    )
    reflect_note_chars: int = Field(
        1600, ge=200, description="Characters of one note a reflect call shows (its start)."
    )
    reflect_max_tokens: int = Field(
        450, gt=0, description="Token budget of one reflect call's reply (its JSON)."
    )
    worker_poll_seconds: float = Field(2.0, gt=0, description="Chat worker poll interval.")
    worker_context_chars: int = Field(4000, gt=0, description="Thread context cap per queued turn.")
    worker_id: str = Field(
        default_factory=lambda: f"{socket.gethostname()}-chat-worker",
        description="Stable id of this chat worker; a restarted worker takes back its own turns.",
    )
    worker_port: int = Field(
        50055,
        ge=0,
        le=65535,
        description="The chat worker's gRPC health port (loopback; 0 picks a free one).",
    )
    worker_metrics_port: int | None = Field(
        None, ge=0, le=65535, description="The chat worker's Prometheus /metrics port."
    )
    worker_lease_seconds: float = Field(
        120.0, gt=0, description="A thinking turn whose worker is silent this long is requeued."
    )
    max_pending_turns: int = Field(
        100,
        ge=1,
        description="Queued turns waiting for a worker beyond which a new one is refused "
        "(RESOURCE_EXHAUSTED, HTTP 429) rather than left to wait behind them.",
    )

    @field_validator("state_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        # The message never repeats the value: it may hold a password.
        if value is None or not value.get_secret_value().strip():
            return None
        url = value.get_secret_value().strip()
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (parsing it is the check: a bad port raises)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
            raise ValueError(
                "must be a PostgreSQL URL, postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE "
                "(or unset, for SQLite in the data dir)"
            )
        return SecretStr(url)

    @property
    def state_path(self) -> Path:
        """The SQLite database (used when ``state_url`` is unset)."""
        return self.data_dir / "state.db"

    @property
    def state_location(self) -> Path | str:
        """Where the store lives: the PostgreSQL URL if set, else the SQLite file."""
        return self.state_url.get_secret_value() if self.state_url else self.state_path
