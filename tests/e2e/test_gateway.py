"""The HTTP gateway on the real stack (real embedding model, real llama.cpp model): `memex up` starts
it, and ask, SSE chat, the OpenAI client and a disconnect that stops the model work end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from openai import OpenAI

from memex.reasoner.catalogue import TEST_MODEL, tiny_model_path
from memex.testing import require
from memex.testing.stack import private_stack_env

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


@pytest.fixture(scope="module")
def real_stack(
    tmp_path_factory: pytest.TempPathFactory, model_dir: Path
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """One stack (the tiny model, NOTES indexed, a user persona) for the tests of this module
    that leave it as they found it: starting one takes most of a test's time."""
    tmp = tmp_path_factory.mktemp("stack")
    # Greedy chat: the tiny model's reply to a question is then the same on every run, so a
    # test that needs it streamed in pieces does not depend on what a sample happens to say.
    env = private_stack_env(
        tmp / "data",
        MEMEX_START_TIMEOUT_SECONDS="180",
        MEMEX_REASONER_MODEL=TEST_MODEL,
        MEMEX_ORCHESTRATOR_CHAT_TEMPERATURE="0",
    )
    # A persona of the user's own, from the personas folder: it must be a model like the built-ins.
    (tmp / "data" / "personas").mkdir(parents=True)
    (tmp / "data" / "personas" / "historian.toml").write_text(
        'name = "historian"\ndescription = "Dates first."\nsystem_prompt = "Give dates first."\n'
    )
    command = [sys.executable, "-m", "memex.cli"]
    try:
        yield command, start(command, env, tmp)
    finally:
        subprocess.run([*command, "down"], env=env, timeout=90, check=False)


def test_the_gateway_on_the_real_stack(real_stack: tuple[list[str], dict[str, str]]) -> None:
    memex_cli, stack = real_stack
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


def llm_env(user_path: Path) -> dict[str, str]:
    """The environment of the `llm` CLI: its own user dir (keys, logs, model config), no plugins
    (only its built-in OpenAI support: nothing installed later may phone home), no OpenAI key or
    base URL of the machine's, and no proxy between it and the loopback gateway."""
    dropped = ("OPENAI_", "LLM_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(dropped)}
    return {
        **env,
        "LLM_USER_PATH": str(user_path),
        "LLM_LOAD_PLUGINS": "",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def llm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm", *args], env=env, capture_output=True, text=True, timeout=600
    )


def llm_streamed(env: dict[str, str], *args: str) -> tuple[list[bytes], int, str]:
    """Runs `llm` and reads its stdout as it is written: (the pieces read, exit code, stderr)."""
    with subprocess.Popen(
        [sys.executable, "-m", "llm", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        pieces = []
        while piece := os.read(process.stdout.fileno(), 65536):
            pieces.append(piece)
        stderr = process.stderr.read().decode()
        return pieces, process.wait(timeout=600), stderr


def conversation_ids(client: httpx.Client) -> set[str]:
    listed = client.get("/v1/conversations", params={"limit": 1000})
    assert listed.status_code == 200, listed.text
    return {c["id"] for c in listed.json()["conversations"]}


def test_third_party_clients_on_the_real_stack(
    real_stack: tuple[list[str], dict[str, str]], tmp_path: Path
) -> None:
    """Clients nobody here wrote: the official `openai` SDK lists the models (every persona, the
    personas folder's too), and the `llm` CLI, configured from that list, streams a reply and
    continues the conversation with `-c`."""
    _, stack = real_stack
    base = f"http://127.0.0.1:{stack['MEMEX_GATEWAY_PORT']}"
    sdk = OpenAI(base_url=f"{base}/v1", api_key="any-key-on-loopback", max_retries=0, timeout=600)
    models = sdk.models.list().data
    ids = [m.id for m in models]
    assert ids == [
        "memex",
        "memex/analyst",
        "memex/coach",
        "memex/friend",
        "memex/historian",
        "memex/skeptic",
    ]
    assert {(m.object, m.owned_by) for m in models} == {("model", "memex")}
    assert sdk.models.retrieve("memex/historian").id == "memex/historian"

    # `llm` lists the models configured for it, not the server's: configured from the list.
    user_path = tmp_path / "llm"
    user_path.mkdir()
    entries = [
        {"model_id": i.replace("/", "-"), "model_name": i, "api_base": f"{base}/v1"}
        for i in [*ids, "memex/poet"]  # and one the gateway does not serve
    ]
    (user_path / "extra-openai-models.yaml").write_text(yaml.safe_dump(entries))
    env = llm_env(user_path)
    listed = llm(env, "models")
    assert listed.returncode == 0, listed.stderr
    for i in ids:
        assert f": {i.replace('/', '-')}" in listed.stdout, listed.stdout

    refused = llm(env, "-m", "memex-poet", "Hello?")
    assert refused.returncode != 0
    assert "404" in refused.stderr and "does not exist" in refused.stderr, refused.stderr

    with httpx.Client(base_url=base, timeout=60) as client:
        before = conversation_ids(client)
        # A streamed reply (llm streams by default): it arrives in pieces, as it is written.
        question = "How much of the deposit did Graham return?"
        pieces, code, stderr = llm_streamed(env, "-m", "memex-analyst", question)
        assert code == 0, stderr
        reply = b"".join(pieces).decode().strip()
        assert reply and "@@CITATIONS" not in reply
        assert len(pieces) > 1, pieces
        [started] = conversation_ids(client) - before

        # `llm -c` sends the whole history again; the gateway knows it as that reply's and
        # continues the same memex conversation rather than starting another.
        followed = llm(env, "-c", "And how much went on cleaning?")
        assert followed.returncode == 0, followed.stderr
        assert followed.stdout.strip()
        assert conversation_ids(client) - before == {started}
        stored = client.get(f"/v1/conversations/{started}").json()["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
        assert [stored[0]["text"], stored[2]["text"]] == [
            question,
            "And how much went on cleaning?",
        ]

    # llm's own log agrees: one conversation of two responses, from the analyst model.
    logged = json.loads(llm(env, "logs", "list", "--json", "-n", "2").stdout)
    assert len({r["conversation_id"] for r in logged}) == 1
    assert {r["model"] for r in logged} == {"memex-analyst"}


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
