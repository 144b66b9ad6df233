"""The small parts on their own: the FIFO scheduler, stop strings, schemas, settings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from memex.cli.stack.services import stack_services
from memex.reasoner.config import ReasonerSettings
from memex.reasoner.errors import InvalidOutput
from memex.reasoner.scheduler import Scheduler
from memex.reasoner.schema import example_instance, parse_schema, validate_output
from memex.reasoner.text import StopMatcher
from memex.shared.errors import InvalidArgument, ResourceExhausted
from memex.shared.stack_settings import StackSettings


async def test_scheduler_serves_waiters_first_in_first_out() -> None:
    scheduler = Scheduler(max_active=1, max_queue=10)
    order: list[int] = []
    gate = asyncio.Event()

    async def job(n: int) -> None:
        async with scheduler.slot():
            order.append(n)
            await gate.wait()

    tasks = [asyncio.create_task(job(n)) for n in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert (scheduler.active, scheduler.queued) == (1, 4)
    gate.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4]
    assert scheduler.idle.is_set()
    assert (scheduler.active, scheduler.queued) == (0, 0)


async def test_scheduler_refuses_when_the_queue_is_full() -> None:
    scheduler = Scheduler(max_active=1, max_queue=1)
    gate = asyncio.Event()

    async def hold() -> None:
        async with scheduler.slot():
            await gate.wait()

    tasks = [asyncio.create_task(hold()) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(ResourceExhausted, match="1 generations running and 1 waiting"):
        async with scheduler.slot():
            pass
    gate.set()
    await asyncio.gather(*tasks)


async def test_a_cancelled_waiter_leaves_the_queue_and_measures_its_wait() -> None:
    scheduler = Scheduler(max_active=1, max_queue=5)
    gate = asyncio.Event()
    waits: list[float] = []

    async def hold() -> None:
        async with scheduler.slot() as waited:
            waits.append(waited)
            await gate.wait()

    first = asyncio.create_task(hold())
    await asyncio.sleep(0)
    second = asyncio.create_task(hold())
    third = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    second.cancel()
    await asyncio.sleep(0)
    assert scheduler.queued == 1
    gate.set()
    await asyncio.gather(first, third)
    assert second.cancelled()
    assert len(waits) == 2
    assert waits[1] >= 0.01
    assert scheduler.idle.is_set()


@pytest.mark.parametrize(
    ("pieces", "stops", "expected", "stopped"),
    [
        (["Hello wor", "ld"], [], "Hello world", False),
        (["Hello ", "EN", "D and more"], ["END"], "Hello ", True),
        (["a<", "|x", "y"], ["<|im"], "a<|xy", False),
        (["done.", "\n\n", "User:"], ["\n\nUser:"], "done.", True),
    ],
)
def test_stop_strings_are_cut_even_across_pieces(
    pieces: list[str], stops: list[str], expected: str, stopped: bool
) -> None:
    matcher = StopMatcher(stops)
    out, hit = "", False
    for piece in pieces:
        text, hit = matcher.feed(piece)
        out += text
        if hit:
            break
    if not hit:
        out += matcher.flush()
    assert (out, hit) == (expected, stopped)


def test_schemas_are_checked_and_outputs_validated() -> None:
    assert parse_schema("") is None
    with pytest.raises(InvalidArgument, match="not valid JSON"):
        parse_schema("{nope")
    with pytest.raises(InvalidArgument, match="must be a JSON object"):
        parse_schema("[1]")
    with pytest.raises(InvalidArgument, match="not a valid JSON Schema"):
        parse_schema('{"type": "banana"}')
    schema = parse_schema(
        json.dumps(
            {
                "type": "object",
                "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
                "required": ["steps"],
            }
        )
    )
    assert schema is not None
    validate_output('{"steps": ["a"]}', schema)
    # Small models put raw newlines and tabs inside strings; the meaning is unambiguous.
    validate_output('{"steps": ["line one\nline two\tend"]}', schema)
    with pytest.raises(InvalidOutput, match="not valid JSON"):
        validate_output('{"steps": [', schema)
    with pytest.raises(InvalidOutput, match="does not match the schema at steps/0"):
        validate_output('{"steps": [1]}', schema)


def test_the_stub_example_satisfies_a_plan_schema() -> None:
    schema = {
        "type": "object",
        "$defs": {"tool": {"enum": ["search_vault", "list_inbox"]}},
        "properties": {
            "steps": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"tool": {"$ref": "#/$defs/tool"}, "limit": {"type": "integer"}},
                    "required": ["tool", "limit"],
                },
            }
        },
        "required": ["steps"],
    }
    validate_output(json.dumps(example_instance(schema)), schema)


def test_the_stub_never_stands_in_for_a_configured_model(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="a real model is configured"):
        ReasonerSettings(engine="stub", model_path=tmp_path / "x.gguf")
    with pytest.raises(ValidationError, match="needs MEMEX_REASONER_OPENAI_BASE_URL"):
        ReasonerSettings(engine="openai")
    with pytest.raises(ValidationError, match="set the engine to stub"):
        ReasonerSettings(stub_script=tmp_path / "s.json")
    assert ReasonerSettings().engine == "llama_cpp"


def test_the_api_key_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_REASONER_OPENAI_API_KEY", "sk-very-secret")
    settings = ReasonerSettings(engine="openai", openai_base_url="http://x/v1", openai_model="m")
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings.model_dump())
    assert settings.openai_api_key.get_secret_value() == "sk-very-secret"


def test_memex_up_runs_the_reasoner_on_its_ports() -> None:
    settings = StackSettings()
    reasoner = {s.name: s for s in stack_services(settings)}["reasoner"]
    assert reasoner.module == "memex.reasoner"
    assert reasoner.address == "127.0.0.1:50053"
    assert reasoner.health_service == "memex.reasoner.v1.ReasonerService"
    assert reasoner.env["MEMEX_REASONER_METRICS_PORT"] == "9153"
    # The model comes from the environment `memex up` inherits (the supervisor passes os.environ
    # on), so the stack must not set it for the reasoner.
    assert not {"MEMEX_REASONER_MODEL", "MEMEX_REASONER_MODEL_PATH"} & set(reasoner.env)
