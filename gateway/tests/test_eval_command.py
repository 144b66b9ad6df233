"""`memex eval` end to end: the real CLI process against a fake orchestrator servicer on a real
in-process grpc.aio server on port 0, streaming AskStream events and listing logged asks."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.testing import free_port

# question -> (answer, abstained, cited refs)
ANSWERS: dict[str, tuple[str, bool, list[str]]] = {
    "What does the allotment cost?": (
        "Plot 23B costs £48 a year.",
        False,
        ["[[Allotment Tenancy Agreement]]"],
    ),
    "How much of my deposit came back?": (
        "Graham returned 1,030 pounds.",
        False,
        ["[[Moving Flat]]"],
    ),
    "What is my blood type?": ("I can't find that in your notes.", True, []),
    "Who is my dentist?": ("Dr Smith.", False, ["[[Home]]"]),
    "Is it true that aspirin lowers fever?": ("Yes.", False, ["[[4983]]"]),
}
QUESTIONS = [
    {"id": "cost", "question": "What does the allotment cost?", "answerable": True,
     "gold": ["Allotment Tenancy Agreement"], "facts": ["£48", ["a year", "annual"]]},
    {"id": "deposit", "question": "How much of my deposit came back?", "answerable": True,
     "gold": ["Flat Deposit Agreement"], "facts": ["£1,030"]},
    {"id": "blood", "question": "What is my blood type?", "answerable": False},
    {"id": "dentist", "question": "Who is my dentist?", "answerable": False},
    {"id": "broken", "question": "Will this fail?", "answerable": True, "gold": ["X"]},
]  # fmt: skip


class Reasoner(reasoner_pb2_grpc.ReasonerServiceServicer):
    """Says how fast it prefilled when it loaded, as the real one does."""

    async def Info(self, request: Any, context: Any) -> reasoner_pb2.InfoResponse:
        return reasoner_pb2.InfoResponse(engine="stub", prefill_tokens_per_second=87.54)


class Orchestrator(orchestrator_pb2_grpc.OrchestratorServiceServicer):
    """Streams fixed answers word by word; lists two logged asks."""

    def __init__(self) -> None:
        self.asked: list[opb.AskRequest] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def AskStream(self, request: Any, context: Any) -> AsyncIterator[opb.AskStreamResponse]:
        request = request.ask  # AskStreamRequest wraps Ask's request
        self.asked.append(request)
        if request.question == "Will this fail?":
            await context.abort(grpc.StatusCode.INTERNAL, "the model fell over")
        answer, abstained, refs = ANSWERS[request.question]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            yield opb.AskStreamResponse(
                started=opb.AskStarted(model="tiny", persona="analyst", sources=refs)
            )
            await asyncio.sleep(0.02)
            yield opb.AskStreamResponse(delta="")  # empty deltas are not first words
            if not abstained and "deposit" in request.question:
                # A first pass that did not stand: its draft is set aside.
                yield opb.AskStreamResponse(delta="I don't know.")
                await asyncio.sleep(0.05)
                yield opb.AskStreamResponse(redraft=opb.AskRedraft(reason="reading all 2"))
                await asyncio.sleep(0.05)
            for word in answer.split(" "):
                await asyncio.sleep(0.01)
                yield opb.AskStreamResponse(delta=word + " ")
            yield opb.AskStreamResponse(
                result=opb.AskResponse(
                    answer=answer,
                    abstained=abstained,
                    citations=[common_pb2.Citation(ref=r) for r in refs],
                    persona=request.persona or "analyst",
                    model="tiny",
                )
            )
        finally:
            self.in_flight -= 1

    async def Search(self, request: Any, context: Any) -> opb.SearchResponse:
        self.asked.append(request)
        if request.query == "Will this fail?":
            await context.abort(grpc.StatusCode.INTERNAL, "the index fell over")
        # Two chunks of one note count once: the gold note of "deposit" ranks second.
        refs = {
            "What does the allotment cost?": ["[[Allotment Tenancy Agreement]]", "[[Home]]"],
            "How much of my deposit came back?": [
                "[[Moving Flat]]", "[[Moving Flat]]", "[[Flat Deposit Agreement#Terms]]",
            ],
        }[request.query]  # fmt: skip
        return opb.SearchResponse(items=[opb.MemoryItem(citation=r) for r in refs])

    async def ListLoggedAsks(self, request: Any, context: Any) -> opb.ListLoggedAsksResponse:
        self.asked.append(request)
        return opb.ListLoggedAsksResponse(
            asks=[
                opb.LoggedAsk(
                    turn_id="turn-new",
                    question="What does the allotment cost?",
                    persona="coach",
                    answer="Plot 23B costs  £48 a year.",
                    cited_refs=["[[Allotment Tenancy Agreement]]"],
                ),
                opb.LoggedAsk(
                    turn_id="turn-old",
                    question="What is my blood type?",
                    persona="analyst",
                    answer="O negative.",
                    cited_refs=["[[GP Appointment]]"],
                ),
                opb.LoggedAsk(turn_id="turn-older", question="What does the allotment cost?",
                              persona="coach"),
            ]
        )  # fmt: skip


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[tuple[dict[str, str], Orchestrator]]:
    orchestrator = Orchestrator()  # type: ignore[abstract]
    server = grpc.aio.server()
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(orchestrator, server)
    port = server.add_insecure_port("127.0.0.1:0")
    reasoner = grpc.aio.server()
    reasoner_pb2_grpc.add_ReasonerServiceServicer_to_server(Reasoner(), reasoner)  # type: ignore[abstract]
    reasoner_port = reasoner.add_insecure_port("127.0.0.1:0")
    await server.start()
    await reasoner.start()
    env = {
        **os.environ,
        "MEMEX_DATA_DIR": str(tmp_path),
        "MEMEX_ORCHESTRATOR_PORT": str(port),
        "MEMEX_REASONER_PORT": str(reasoner_port),
    }
    try:
        yield env, orchestrator
    finally:
        await server.stop(None)
        await reasoner.stop(None)


async def memex(env: dict[str, str], *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.cli", *args, env=env, cwd=cwd,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


async def test_eval_reports_the_metrics_and_the_failures(stack: Any, tmp_path: Path) -> None:
    env, orchestrator = stack
    questions = write(tmp_path / "q.jsonl", QUESTIONS)
    report = tmp_path / "out" / "eval.md"
    code, out, err = await memex(
        env, "eval", str(questions), "--persona", "skeptic", "--tenant", "t", "--out", str(report)
    )
    assert code == 0, err
    assert [(r.question, r.persona, r.tenant) for r in orchestrator.asked] == [
        (q["question"], "skeptic", "t") for q in QUESTIONS
    ]
    assert "5 questions (3 answerable, 2 unanswerable, 1 failed to run)" in out
    assert "cited-correct (answerable)       33% (1/3)" in out
    assert "citation precision               33% (1/3)" in out  # cost 1/1, deposit 0/1, dentist 0/1
    assert "abstention (unanswerable)        50% (1/2)" in out
    assert "false abstention (answerable)    0% (0/3)" in out
    assert "[deposit] How much of my deposit came back?" in out
    assert "failed: no gold citation" in out  # "1,030 pounds" states £1,030
    assert "failed: answered (should abstain)" in out
    assert "failed: error: INTERNAL: the model fell over" in out
    assert "[cost]" not in out and "[blood]" not in out  # passes are not listed
    assert "[5/5]" in err  # progress on stderr
    markdown = report.read_text()
    assert "| cited-correct (answerable) | 33% (1/3) |" in markdown
    assert "| cost | What does the allotment cost? | ok |" in markdown


async def test_eval_json_has_every_row_and_timings(stack: Any, tmp_path: Path) -> None:
    env, _ = stack
    questions = write(tmp_path / "q.jsonl", QUESTIONS)
    code, out, _ = await memex(env, "eval", str(questions), "--json", "--limit", "3")
    assert code == 0
    report = json.loads(out)
    assert (report["questions"], report["model"], report["persona"]) == (3, "tiny", "analyst")
    # The speed that sized each ask's first pass, so runs can be paired by it.
    assert report["prefill_tokens_per_second"] == 87.5
    assert report["metrics"]["cited_correct"] == {"value": 0.5, "hits": 1, "total": 2}
    assert report["metrics"]["abstention"]["value"] == 1.0
    cost = report["rows"][0]
    assert cost["ok"] and cost["cited_refs"] == ["[[Allotment Tenancy Agreement]]"]
    # The fake server briefs exactly the notes it cites, so the gold note is source [1].
    assert (cost["briefed"], cost["gold_at"]) == (["[[Allotment Tenancy Agreement]]"], 1)
    # First words come with the first non-empty delta, before the result.
    assert 0 < cost["first_words_ms"] < cost["latency_ms"]
    assert not cost["redrafted"] and cost["final_words_ms"] == cost["first_words_ms"]
    # The deposit's first draft was set aside: its final draft began 100 ms later.
    deposit = report["rows"][1]
    assert deposit["redrafted"]
    assert deposit["first_words_ms"] + 100 <= deposit["final_words_ms"] < deposit["latency_ms"]
    assert report["metrics"]["redrafted"] == {"value": 1 / 3, "hits": 1, "total": 3}
    assert report["metrics"]["latency_ms"]["p95"] >= report["metrics"]["latency_ms"]["p50"] > 0


async def test_a_reasoner_out_of_reach_leaves_the_prefill_speed_unknown(
    stack: Any, tmp_path: Path
) -> None:
    env, _ = stack
    questions = write(tmp_path / "q.jsonl", QUESTIONS[:1])
    code, out, err = await memex(env, "eval", str(questions))
    assert code == 0 and "prefill 88 tokens/s at load" in out.splitlines()[0]
    away = {**env, "MEMEX_REASONER_PORT": str(free_port())}
    code, out, err = await memex(away, "eval", str(questions), "--json")
    assert code == 0 and json.loads(out)["prefill_tokens_per_second"] == 0
    assert "error" not in err


async def test_eval_runs_questions_concurrently_when_asked(stack: Any, tmp_path: Path) -> None:
    env, orchestrator = stack
    questions = write(tmp_path / "q.jsonl", QUESTIONS[:4])
    code, _, _ = await memex(env, "eval", str(questions), "--concurrency", "4", "--json")
    assert code == 0 and orchestrator.most_in_flight > 1
    orchestrator.most_in_flight = 0
    code, _, _ = await memex(env, "eval", str(questions), "--json")
    assert code == 0 and orchestrator.most_in_flight == 1


async def test_search_mode_ranks_gold_notes_without_asking(stack: Any, tmp_path: Path) -> None:
    env, orchestrator = stack
    questions = write(tmp_path / "q.jsonl", QUESTIONS)
    code, out, err = await memex(env, "eval", str(questions), "--search", "--persona", "coach")
    assert code == 0, err
    # Only the answerable questions are searched, k=10, with the persona; nothing is asked.
    assert [(r.query, r.persona, r.k) for r in orchestrator.asked] == [
        (q["question"], "coach", 10) for q in QUESTIONS if q["answerable"]
    ]
    assert "3 answerable questions searched (k=10, 1 failed to run)" in out
    assert "gold note first                  33% (1/3)" in out
    assert "gold note in the top 3           67% (2/3)" in out
    assert "mean reciprocal rank             0.500" in out  # (1 + 1/2 + 0) / 3
    assert "[deposit] How much of my deposit came back?" in out
    assert "gold:  Flat Deposit Agreement (rank 2)" in out
    assert "INTERNAL: the index fell over" in out
    assert "[cost]" not in out  # gold first: not listed
    code, out, _ = await memex(env, "eval", str(questions), "--search", "--json")
    report = json.loads(out)
    assert report["metrics"]["gold_at_1"] == {"value": 1 / 3, "hits": 1, "total": 3}
    rows = {r["id"]: r for r in report["rows"]}
    assert rows["deposit"]["found"] == ["[[Moving Flat]]", "[[Flat Deposit Agreement#Terms]]"]
    assert rows["deposit"]["gold_at"] == 2 and rows["broken"]["gold_at"] is None
    code, _, err = await memex(env, "eval", str(questions), "--search", "--out", "x.md")
    assert code == 2 and "--json" in err
    code, _, err = await memex(env, "eval", "--search", "--replay")
    assert code == 2 and "question file" in err


async def test_a_bad_question_file_is_exit_2_with_line_numbers(stack: Any, tmp_path: Path) -> None:
    env, orchestrator = stack
    bad = write(tmp_path / "bad.jsonl", [QUESTIONS[0], "{oops", {"id": "x", "answerable": True}])
    code, out, err = await memex(env, "eval", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}:2: not JSON" in err and f"{bad}:3:" in err and "Traceback" not in err
    code, _, err = await memex(env, "eval", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    code, _, err = await memex(env, "eval")
    assert code == 2 and "question file" in err
    code, _, err = await memex(env, "eval", str(bad), "--concurrency", "0")
    assert code == 2
    assert orchestrator.asked == []


async def test_query_id_questions_read_their_text_from_the_data_folder(
    stack: Any, tmp_path: Path
) -> None:
    env, orchestrator = stack
    questions = write(
        tmp_path / "scifact.jsonl",
        [{"id": "s1", "query_id": "7", "gold": ["4983"], "answerable": True}],
    )
    code, _, err = await memex(env, "eval", str(questions), "--data", str(tmp_path / "nowhere"))
    assert code == 0 and "skipped:" in err and orchestrator.asked == []
    data = tmp_path / "beir"
    data.mkdir()
    (data / "queries.jsonl").write_text(
        json.dumps({"_id": "7", "text": "Aspirin lowers fever."}) + "\n"
    )
    code, out, err = await memex(env, "eval", str(questions), "--data", str(data), "--json")
    assert code == 0, err
    assert orchestrator.asked[-1].question == "Is it true that aspirin lowers fever?"
    assert json.loads(out)["metrics"]["cited_correct"]["value"] == 1.0


async def test_replay_asks_logged_questions_again_and_shows_the_changes(stack: Any) -> None:
    env, orchestrator = stack
    code, out, err = await memex(env, "eval", "--replay", "--tenant", "t")
    assert code == 0, err
    listed, *asked = orchestrator.asked
    assert (listed.tenant, listed.limit) == ("t", 500)
    # The repeated question is asked once, with the persona it was logged with.
    assert [(a.question, a.persona, a.tenant) for a in asked] == [
        ("What does the allotment cost?", "coach", "t"),
        ("What is my blood type?", "analyst", "t"),
    ]
    assert not any(a.include_sensitive for a in asked)  # as `memex ask`: only when told
    assert out.startswith("2 logged asks replayed: 1 changed (1 answer text, 1 abstention flipped")
    assert "[turn-new]" not in out  # whitespace-only difference: unchanged
    assert "[turn-old] What is my blood type?  (analyst)" in out
    assert "answered → abstained" in out and "cited no longer: [[GP Appointment]]" in out
    code, out, _ = await memex(
        env, "eval", "--replay", "--limit", "1", "--json", "--include-sensitive"
    )
    assert orchestrator.asked[-1].include_sensitive
    assert code == 0
    report = json.loads(out)
    assert (report["replayed"], report["changed"]) == (1, 0)
    assert report["asks"][0]["before"]["answer"] == "Plot 23B costs  £48 a year."
    code, _, err = await memex(env, "eval", "q.jsonl", "--replay")
    assert code == 2


async def test_eval_says_start_memex_when_it_is_down(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMEX_DATA_DIR": str(tmp_path),
        "MEMEX_ORCHESTRATOR_PORT": str(free_port()),
    }
    questions = write(tmp_path / "q.jsonl", QUESTIONS[:1])
    for args in (["eval", str(questions)], ["eval", "--replay"]):
        code, out, err = await memex(env, *args)
        assert code == 3, err
        assert "memex isn't running" in err and out == ""
