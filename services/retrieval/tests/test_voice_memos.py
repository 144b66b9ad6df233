"""Voice memos (ingest/audio.py): real speech (Debian's espeak-ng) transcribed by the real Whisper
tiny.en model (`make models` prepares it for the tests), sectioned by time, indexed, cited to
the time, and not transcribed again while unchanged; through the real retrieval service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.ingest import audio
from memex.retrieval.ingest.audio import Spoken, Transcriber, clock, sections
from memex.retrieval.server import build as build_retrieval
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.retrieval.whisper_models import CATALOGUE
from memex.testing import require, serving
from memex.testing.retrieval import ESPEAK, MEMO_PADLOCK, MEMO_RAMBLE, index_vault, speak

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub

TINY = CATALOGUE["tiny.en"]


def spoken_memo(path: Path) -> Path:
    """A memo of about 40 seconds: a ramble, a pause, then the padlock's price."""
    require(TINY.path() / "model.bin", "run `make models` (the tests' Whisper tiny.en)")
    require(ESPEAK, "run `make espeak`")
    return speak(path, MEMO_RAMBLE, MEMO_PADLOCK)


def test_clock_and_sections_follow_pauses_and_sentences() -> None:
    assert clock(161.9) == "02:41"
    assert clock(3761) == "1:02:41"
    said = [
        Spoken(0.0, 12.0, " First"),
        Spoken(12.0, 25.0, " thought."),
        Spoken(25.0, 29.0, " Still"),
        Spoken(29.0, 31.0, " first,"),  # past 30 s but mid-sentence: the section goes on
        Spoken(31.0, 33.0, " ending."),
        Spoken(33.0, 40.0, " A"),  # past 30 s after a sentence's end: a new section
        Spoken(40.0, 41.0, " second."),
        Spoken(43.5, 44.0, " After"),  # 2.5 s of silence: a new section
        Spoken(44.0, 45.0, " a pause."),
        Spoken(45.0, 45.5, "  "),
    ]
    assert sections(said) == [
        ("00:00", "First thought. Still first, ending."),
        ("00:33", "A second."),
        ("00:43", "After a pause."),
    ]
    unbroken = [Spoken(float(t), t + 10.0, " and then") for t in range(0, 200, 10)]
    assert [start for start, _ in sections(unbroken)] == ["00:00", "01:30", "03:00"]


def test_a_spoken_memo_is_transcribed_into_timed_sections(tmp_path: Path) -> None:
    memo = spoken_memo(tmp_path / "2026-03-14 walk memo.wav")
    read = Transcriber(TINY.path()).transcribe(memo)
    assert read.text is not None, read.reason
    assert read.text.startswith("---\ntitle: 2026-03-14 walk memo\n---\n\n## 00:00\n")
    later = read.text.split("## ")[-1]
    start, _, words = later.partition("\n\n")
    assert start != "00:00" and "padlock" in words and "12" in words


def test_a_memo_that_cannot_be_read_or_heard_says_why(tmp_path: Path) -> None:
    require(TINY.path() / "model.bin", "run `make models` (the tests' Whisper tiny.en)")
    broken = tmp_path / "broken.mp3"
    broken.write_bytes(b"ID3 this is not audio")
    reason = Transcriber(TINY.path()).transcribe(broken).reason
    assert reason.startswith("not a readable recording: "), reason
    missing = Transcriber(tmp_path / "no-model").transcribe(broken).reason
    assert "need the Whisper model" in missing and "make models" in missing


@pytest.fixture
async def retrieval_tiny(tmp_path: Path, embedding_addr: str) -> AsyncIterator[Stub]:
    """The retrieval service transcribing with tiny.en."""
    settings = RetrievalSettings(
        port=0,
        embedding_addr=embedding_addr,
        store_dir=tmp_path / "store",
        recency_half_life_days=0,
        whisper_model="tiny.en",
    )
    async with (
        serving(build_retrieval(settings)) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        yield retrieval_pb2_grpc.RetrievalServiceStub(channel)


async def test_a_memo_is_indexed_cited_to_its_time_and_not_transcribed_again(
    retrieval_tiny: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    spoken_memo(vault / "memos/2026-03-14 walk memo.wav")
    (vault / "memos/broken.m4a").write_bytes(b"not audio at all")
    summary = await index_vault(retrieval_tiny, vault)
    assert summary.added == 1
    assert {s.path for s in summary.skipped} == {"memos/broken.m4a"}

    reply = await retrieval_tiny.Search(
        retrieval_pb2.SearchRequest(query="how much is the padlock for the allotment shed")
    )
    top = reply.items[0]
    assert top.citation.startswith("[[2026-03-14 walk memo]] 00:")
    assert top.citation != "[[2026-03-14 walk memo]] 00:00"
    assert "padlock" in top.text
    assert top.provenance.date == "2026-03-14"  # dated by its name, as a daily note is

    def never(*_: object) -> None:
        raise AssertionError("an unchanged memo was transcribed again")

    monkeypatch.setattr(audio.Transcriber, "transcribe", never)
    again = await index_vault(retrieval_tiny, vault)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 1)


async def test_the_whisper_model_folder_can_be_named(tmp_path: Path, embedding_addr: str) -> None:
    # A deployment copies the model out of its models image and names the folder.
    elsewhere = tmp_path / "mounted" / "whisper-base"
    settings = RetrievalSettings(
        port=0,
        embedding_addr=embedding_addr,
        store_dir=tmp_path / "store",
        whisper_model_dir=elsewhere,
    )
    vault = tmp_path / "vault"
    (vault / "memos").mkdir(parents=True)
    (vault / "memos/walk.m4a").write_bytes(b"not audio, and no model to hear it")
    async with (
        serving(build_retrieval(settings)) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        summary = await index_vault(retrieval_pb2_grpc.RetrievalServiceStub(channel), vault)
    (skipped,) = summary.skipped
    assert str(elsewhere) in skipped.reason and "need the Whisper model" in skipped.reason
