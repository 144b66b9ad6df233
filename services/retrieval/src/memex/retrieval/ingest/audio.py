"""Voice memos read as note text: transcribed on CPU with faster-whisper (CTranslate2), the audio
decoded by PyAV, a section per stretch of speech headed by the time it starts.

A memo becomes Markdown like the documents of ``documents.py``: its title is the file's name
without the suffix (``2026-03-14 walk memo``, dated by it as daily notes are), and it has a
``## 02:41`` section per paragraph of speech (``sections``), so a citation names the time to play
from (``[[2026-03-14 walk memo]] 02:41``). Silence is skipped (Silero VAD, shipped inside
faster-whisper), which also keeps Whisper from inventing words in it.

The model loads once, on the first memo of a run: indexing a vault without audio never loads it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memex.retrieval.ingest.documents import Extracted, escape, note_markdown

log = logging.getLogger(__name__)

PAUSE_SECONDS = 2.0
SECTION_SECONDS = 30.0
MAX_SECTION_SECONDS = 90.0


@dataclass(frozen=True)
class Spoken:
    """One word of a transcript, as Whisper writes it (with its leading space)."""

    start: float
    end: float
    text: str


def clock(seconds: float) -> str:
    """``02:41``, or ``1:02:41`` past the hour."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return (
        f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
        if hours
        else f"{rest // 60:02d}:{rest % 60:02d}"
    )


def sections(words: Iterable[Spoken]) -> list[tuple[str, str]]:
    """(start time, text) per stretch of speech. A new one starts after a pause, or once a
    stretch has run ``SECTION_SECONDS`` and its last segment ended a sentence, or in any case
    at ``MAX_SECTION_SECONDS``: about a paragraph each, as a chunk should be."""
    out: list[tuple[float, float, list[str]]] = []
    for word in words:
        if not word.text.strip():
            continue
        if out:
            start, end, said = out[-1]
            ran = word.start - start
            paused = word.start - end > PAUSE_SECONDS
            long = ran >= MAX_SECTION_SECONDS or (
                ran >= SECTION_SECONDS and said[-1].rstrip().endswith((".", "?", "!"))
            )
            if not (paused or long):
                out[-1] = (start, word.end, [*said, word.text])
                continue
        out.append((word.start, word.end, [word.text]))
    return [(clock(start), "".join(said).strip()) for start, _, said in out]


class Transcriber:
    """Transcribes memos with the Whisper model in ``model_dir`` (a CTranslate2 folder that
    `make models` prepares); thread-safe, the model loaded on first use."""

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        self._model_dir = model_dir
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def transcribe(self, path: Path) -> Extracted:
        """The memo at ``path`` as note text, or the reason it is skipped."""
        if not (self._model_dir / "model.bin").is_file():
            return Extracted(
                None,
                f"voice memos need the Whisper model, missing from {self._model_dir}: run "
                "`make models`",
            )
        try:
            with self._lock:  # one transcription at a time: it uses every core it is given
                # Word times: a segment can run across a pause, and a citation's time should
                # be where its words start.
                segments, info = self._load().transcribe(
                    str(path), vad_filter=True, beam_size=1, word_timestamps=True
                )
                spoken = [Spoken(w.start, w.end, w.word) for s in segments for w in s.words or ()]
        except Exception as exc:  # PyAV's and CTranslate2's errors share no base class
            log.info("could not transcribe %s: %s", path, exc)
            return Extracted(None, f"not a readable recording: {exc}")
        found = sections(spoken)
        if not found:
            return Extracted(None, f"no speech in {info.duration:.0f} s of audio")
        text = note_markdown(path.stem, None, [(heading, escape(t)) for heading, t in found])
        return Extracted(text)

    def _load(self) -> Any:
        if self._model is None:
            from faster_whisper import WhisperModel  # CTranslate2 loads only when a memo comes

            self._model = WhisperModel(
                str(self._model_dir),
                device="cpu",
                compute_type="int8",
                cpu_threads=self._threads,
                local_files_only=True,
            )
        return self._model
