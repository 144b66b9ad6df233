"""The HTTP gateway on the real stack (real embedding model, real llama.cpp model): `memex up` starts
it, and ask, SSE chat, the OpenAI client and a disconnect that stops the model work end to end."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI

from memex.reasoner.catalogue import tiny_model_path
from memex.shared.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1500)]

NOTES = {
    "Flat lease.md": "---\ntitle: Flat lease\ndate: 2026-02-01\n---\n# Deposit\nGraham agreed to "
    "return £1,030 of the £1,150 deposit; £120 went on carpet cleaning.\n",
    "Allotment.md": "---\ntitle: Allotment\ndate: 2026-03-01\n---\nPlot 23B costs £48 a year.\n",
}
REFS = {"[[Flat lease]]", "[[Allotment]]"}


def run(command: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=400)


def events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield str(name), json.loads(line[6:])


def metric(url: str, name: str, **labels: str) -> float:
    """One sample of a Prometheus metric (0 when absent)."""
    text = httpx.get(url, timeout=10).text
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def start(memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    require(tiny_model_path(), "run `make models`")
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text)
    up = run(memex_cli, stack_env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "gateway" in up.stdout
    indexed = run(memex_cli, stack_env, "index", str(vault), "--json")
    assert indexed.returncode == 0, indexed.stderr
    return stack_env


def ask(client: httpx.Client, question: str) -> httpx.Response:
    """POST /v1/ask."""
    return client.post("/v1/ask", json={"question": question})


def test_the_gateway_on_the_real_stack(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    stack = start(memex_cli, stack_env, tmp_path)
    base = f"http://127.0.0.1:{stack['MEMEX_GATEWAY_PORT']}"
    status = json.loads(run(memex_cli, stack, "status", "--json").stdout)
    assert status["services"]["gateway"]["health"] == "SERVING"
    with httpx.Client(base_url=base, timeout=600) as client:
        deep = client.get("/healthz", params={"deep": "true"})
        assert deep.status_code == 200, deep.text
        assert set(deep.json()["services"]) == {
            "embedding",
            "retrieval",
            "reasoner",
            "orchestrator",
            "worker",
        }

        # Ask: the structured answer; every surviving citation names a note that was shown.
        asked = ask(client, "How much of the deposit did Graham return?")
        assert asked.status_code == 200, asked.text
        answer = asked.json()
        assert answer["answer"] and answer["persona"] == "analyst"
        assert answer["stages"][:3] == ["retrieve", "synthesize", "ground_check"]
        assert {c["ref"] for c in answer["citations"]} <= REFS

        # SSE chat: meta, deltas, citations, done; the conversation is stored.
        with client.stream(
            "POST", "/v1/chat", json={"message": "What does the allotment cost?"}
        ) as r:
            assert r.status_code == 200
            got = list(events(r.iter_lines()))
        names = [n for n, _ in got]
        assert names[0] == "meta" and names[-1] == "done", names
        assert "citations" in names and set(names) <= {"meta", "delta", "citations", "done"}
        conversation_id = got[0][1]["conversation_id"]
        stored = client.get(f"/v1/conversations/{conversation_id}").json()
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
        reply = "".join(d["text"] for n, d in got if n == "delta")
        assert "@@CITATIONS" not in reply
        assert (
            client.post("/v1/chat", json={"message": "hi", "conversation_id": "nope"}).status_code
            == 404
        )

    # The official OpenAI client, both modes, reading the memex extension.
    openai = OpenAI(
        base_url=f"{base}/v1", api_key="any-key-on-loopback", max_retries=0, timeout=600
    )
    completion = openai.chat.completions.create(
        model="memex", messages=[{"role": "user", "content": "What does plot 23B cost?"}]
    )
    assert completion.choices[0].message.content
    extension = completion.model_extra["memex"]  # type: ignore[index]
    assert {c["ref"] for c in extension["citations"]} <= REFS and extension["conversation_id"]
    chunks = list(
        openai.chat.completions.create(
            model="memex",
            messages=[{"role": "user", "content": "Who is Graham?"}],
            stream=True,
        )
    )
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert "citations" in chunks[-1].model_extra["memex"]  # type: ignore[index]
    assert "".join(c.choices[0].delta.content or "" for c in chunks)


def test_a_disconnect_stops_the_model(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    # Long replies, so that the disconnect lands while the model is still generating.
    stack_env["MEMEX_ORCHESTRATOR_ANSWER_MAX_TOKENS"] = "1000"
    stack = start(memex_cli, stack_env, tmp_path)
    base = f"http://127.0.0.1:{stack['MEMEX_GATEWAY_PORT']}"
    reasoner = f"http://127.0.0.1:{stack['MEMEX_REASONER_METRICS_PORT']}/metrics"
    orchestrator = f"http://127.0.0.1:{stack['MEMEX_ORCHESTRATOR_METRICS_PORT']}/metrics"
    generate = "/memex.reasoner.v1.ReasonerService/Generate"
    chat = "/memex.orchestrator.v1.OrchestratorService/Chat"
    message = "Count from 1 to 1000, one number per line. Do not stop early."
    # The tiny model sometimes ends its reply before the disconnect reaches it; such an attempt
    # proves nothing (the generation finished on its own), so it is made again.
    for _attempt in range(3):
        finished_before = metric(
            reasoner, "memex_grpc_server_handled_total", method=generate, code="OK"
        )
        cancelled_before = metric(
            reasoner, "memex_grpc_server_handled_total", method=generate, code="CANCELLED"
        )
        chat_cancelled_before = metric(
            orchestrator, "memex_grpc_server_handled_total", method=chat, code="CANCELLED"
        )
        with (
            httpx.Client(base_url=base, timeout=600) as client,
            client.stream("POST", "/v1/chat", json={"message": message}) as r,
        ):
            assert r.status_code == 200
            stream = events(r.iter_lines())
            assert next(stream)[0] == "meta"
            assert next(stream)[0] == "delta"  # the model is generating now
            assert metric(reasoner, "memex_reasoner_active_streams") == 1.0
            disconnected = time.monotonic()
        # The connection is closed: the gateway cancels its call, the orchestrator its call to
        # the reasoner, and the reasoner stops generating.
        deadline = disconnected + 30
        stopped_after = None
        while time.monotonic() < deadline:
            cancelled = metric(
                reasoner, "memex_grpc_server_handled_total", method=generate, code="CANCELLED"
            )
            active = metric(reasoner, "memex_reasoner_active_streams")
            if stopped_after is None and cancelled > cancelled_before and active == 0:
                stopped_after = time.monotonic() - disconnected
            chat_cancelled = metric(
                orchestrator, "memex_grpc_server_handled_total", method=chat, code="CANCELLED"
            )
            if stopped_after is not None and chat_cancelled == chat_cancelled_before + 1:
                break
            time.sleep(0.2)
        finished = metric(reasoner, "memex_grpc_server_handled_total", method=generate, code="OK")
        if finished == finished_before:
            break
    assert cancelled == cancelled_before + 1, "the reasoner's generation was not cancelled"
    assert metric(reasoner, "memex_reasoner_active_streams") == 0
    chat_lines = [line for line in httpx.get(orchestrator).text.splitlines() if chat in line]
    assert chat_cancelled == chat_cancelled_before + 1, chat_lines
    assert stopped_after is not None
    print(f"reasoner stopped {stopped_after:.2f}s after the client disconnected")
