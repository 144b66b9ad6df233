"""Contradictions, records and beliefs as of a day, and the review of beliefs (issue 37), on the
real stack: every process real (embedding, retrieval, orchestrator, worker, gateway over gRPC and
HTTP on loopback), driven through the `memex` CLI and HTTP, with one exception: the reasoner runs
its stub engine, replaying a script (docs in ``memex.reasoner.stub_engine``). What these
behaviours check is mechanical, but it rests on what the model writes (an answer stating a
figure, a reflect reply proposing a conclusion), and the tests' tiny model does not reliably
write either; scripted, the same request always gets the same words, so the test proves what
memex does with them: the contradiction line and citations it adds, the quotes it grades, the
status transitions, the rejected conclusion it drops, the versions it reads as of a day.

A record version holds from the write that made it (docs/as-of.md), so every record this test
writes holds from today. To read one as of an earlier day, as a record written last month and
changed last week, the test moves its ledger entries back in the store (``_backdate``), as
test_as_of.py sets a note's file time; the reads that follow are the stack's own."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memex.testing.stack import private_stack_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]
CLI = [sys.executable, "-m", "memex.cli"]

# -- the vault ------------------------------------------------------------------------------------

QUESTION = "How much of the deposit did Graham agree to give back?"
OLD_SENTENCE = "Graham agreed to give back £1,030 of the deposit."
NEW_SENTENCE = "Graham emailed: he will now give back only £900 of the deposit."
NOTES = {
    "Deposit call.md": ("2026-03-01", f"Phone call with Graham about the flat. {OLD_SENTENCE}"),
    "Graham email.md": ("2026-04-10", NEW_SENTENCE),
    "Allotment.md": (
        "2026-11-20",
        "I water the allotment every morning before work, even when it rains. "
        "I drink tea, never coffee, on the plot.",
    ),
    "Allotment diary.md": (
        "2026-11-27",
        "Another cold morning on the plot with a flask of tea; coffee stays at home.",
    ),
    "Running.md": (
        "2026-10-05",
        "I go running every Sunday morning before breakfast. I prefer running alone, "
        "without headphones.",
    ),
}
RON = {"id": "ron-whitaker", "name": "Ron Whitaker", "kind": "person", "aliases": ["Ron"]}
RON_THEN = "Allotment secretary at Moor Allotments."
RON_NOW = "Treasurer of Moor Allotments since the AGM."
RENT = {"id": "inbox-rent", "title": "Pay the allotment rent to Ron", "due": "2026-12-31"}

# -- what the stub model says ---------------------------------------------------------------------

ANSWER = f"{OLD_SENTENCE[:-1]} [[Deposit call]]."  # rests on the older note, cited by its title
DIFFER = (
    "Your notes differ on this: [[Graham email]] (10 April 2026) gives £900, "
    "[[Deposit call]] (1 March 2026) gives £1,030."
)
WATERS = "Waters the allotment every morning before work."
TEA = "Drinks tea rather than coffee on the allotment."
RUNS = "Goes running every Sunday morning."
ALONE = "Prefers running alone."


def _belief(statement: str, *quotes: tuple[int, str]) -> dict[str, Any]:
    evidence = [{"note": n, "quote": q} for n, q in quotes]
    return {"statement": statement, "confidence": 0.8, "evidence": evidence, "contradicted_by": []}


def _reply(*beliefs: dict[str, Any]) -> list[str]:
    # "contradicts" answers the question about earlier beliefs that follows a reply too.
    return [json.dumps({"beliefs": list(beliefs), "contradicts": []})]


def _words(text: str) -> list[str]:
    return [w + " " for w in text.split()]


# Matched in order against the whole prompt (briefings hold the notes too): ask and chat by their
# instructions, then the reflect runs by the notes they are shown (a run reads its notes oldest
# first, numbered from 1).
SCRIPT = [
    {"match": "How to answer:", "chunks": _words(ANSWER)},
    {"match": "How to reply:", "chunks": _words(ANSWER)},
    {  # Allotment and Allotment diary: the tea conclusion again, now resting on both notes
        "match": "flask of tea",
        "chunks": _reply(
            _belief(
                TEA,
                (1, "I drink tea, never coffee, on the plot"),
                (2, "cold morning on the plot with a flask of tea"),
            )
        ),
    },
    {
        "match": "every Sunday morning before breakfast",
        "chunks": _reply(
            _belief(RUNS, (1, "I go running every Sunday morning before breakfast")),
            _belief(ALONE, (1, "I prefer running alone, without headphones")),
        ),
    },
    {
        "match": "will still hold later",  # reflect's instructions: here, the Allotment note alone
        "chunks": _reply(
            _belief(WATERS, (1, "I water the allotment every morning before work")),
            _belief(TEA, (1, "I drink tea, never coffee, on the plot")),
        ),
    },
]


def _at(day: str) -> float:
    return dt.datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()


def _write_records(vault: Path, description: str, rent_status: str) -> None:
    records = vault / "records"
    records.mkdir(exist_ok=True)
    (records / "entities.jsonl").write_text(json.dumps({**RON, "description": description}) + "\n")
    (records / "inbox.jsonl").write_text(json.dumps({**RENT, "status": rent_status}) + "\n")


class Stack:
    """The scripted stack: its environment, vault, gateway and store."""

    def __init__(self, env: dict[str, str], vault: Path) -> None:
        self.env = env
        self.vault = vault
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}", timeout=60
        )
        self.store = Path(env["MEMEX_DATA_DIR"]) / "retrieval" / "memex.db"

    def memex(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args], env=self.env, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def json(self, *args: str) -> Any:
        done = self.memex(*args, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[Stack]:
    """A private stack (its reasoner scripted) with the vault above indexed, each note's file
    written on its date, so the notes' versions hold from then."""
    root = tmp_path_factory.mktemp("scripted")
    vault = root / "vault"
    vault.mkdir()
    for name, (day, text) in NOTES.items():
        (vault / name).write_text(f"---\ntitle: {name[:-3]}\ndate: {day}\n---\n{text}\n")
        os.utime(vault / name, (_at(day), _at(day)))
    _write_records(vault, RON_THEN, "pending")
    script = root / "script.json"
    script.write_text(json.dumps({"responses": SCRIPT}))
    env = private_stack_env(
        root / "data",
        MEMEX_START_TIMEOUT_SECONDS="180",
        MEMEX_REASONER_ENGINE="stub",
        MEMEX_REASONER_STUB_SCRIPT=str(script),
        MEMEX_ORCHESTRATOR_PLAN_HOP="never",  # one model call an answer: the scripted one
        MEMEX_ORCHESTRATOR_WORKER_POLL_SECONDS="0.2",
        MEMEX_ORCHESTRATOR_REFLECT_NIGHTLY="false",
    )
    for name in ("MEMEX_REASONER_MODEL", "MEMEX_REASONER_MODEL_PATH"):
        env.pop(name, None)  # the stub refuses to start beside a configured real model
    running = Stack(env, vault)
    try:
        up = running.memex("up")
        assert up.returncode == 0, up.stdout + up.stderr
        indexed = running.json("index", str(vault))
        assert indexed["added"] == len(NOTES) and indexed["recordsUpserted"] == 2, indexed
        yield running
    finally:
        running.http.close()
        subprocess.run([*CLI, "down"], env=env, timeout=90, check=False)


def _days_ago(n: int) -> str:
    return (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=n)).isoformat()


def _backdate(stack: Stack, ref: str, changed_days_ago: int, first_days_ago: int) -> None:
    """Moves the ledger of record ``ref`` (``collection:id``, written twice today) back: version
    1 held from ``first_days_ago`` days ago until ``changed_days_ago``, version 2 since."""
    first = f"{_days_ago(first_days_ago)}T09:00:00Z"
    changed = f"{_days_ago(changed_days_ago)}T09:00:00Z"
    with sqlite3.connect(stack.store, timeout=30) as db:
        for number, start, end in ((1, first, changed), (2, changed, None)):
            moved = db.execute(
                "UPDATE records SET fields = json_set(fields, '$.valid_from', ?, '$.valid_to', ?)"
                " WHERE tenant = 'default~history' AND collection = 'record_versions' AND id = ?",
                (start, end, f"{ref}@v{number}"),
            )
            assert moved.rowcount == 1, (ref, number)
    db.close()


def _by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r["fields"] for r in records}


# -- contradictions -------------------------------------------------------------------------------


def test_an_answer_resting_on_one_note_says_the_other_differs_and_cites_both(stack: Stack) -> None:
    asked = stack.json("ask", QUESTION)
    assert not asked["abstained"] and asked["answer"] == f"{ANSWER}\n\n{DIFFER}", asked["answer"]
    cited = [(c["ref"], c["quote"], c["path"]) for c in asked["citations"]]
    assert cited == [
        ("[[Deposit call]]", OLD_SENTENCE, "Deposit call.md"),
        ("[[Graham email]]", NEW_SENTENCE, "Graham email.md"),  # the other note's sentence
    ]
    assert asked["citations"][1]["support"] == "SUPPORT_VERBATIM"
    done = stack.memex("evidence", asked["turn_id"])  # the bundle is JSON
    assert done.returncode == 0, done.stderr
    bundle = json.loads(done.stdout)
    assert bundle["answer"].endswith(DIFFER)
    assert [c["ref"] for c in bundle["citations"]] == ["[[Deposit call]]", "[[Graham email]]"]

    chatted = stack.json("chat", QUESTION)  # streamed: the line is the reply's last words
    assert chatted["reply"].rstrip().endswith(DIFFER), chatted["reply"]
    assert [c["ref"] for c in chatted["citations"]] == ["[[Deposit call]]", "[[Graham email]]"]
    assert chatted["citations"][1]["quote"] == NEW_SENTENCE

    queued = stack.http.post("/v1/turns", json={"text": QUESTION})  # answered by the worker
    assert queued.status_code == 202, queued.text
    turn = queued.json()["turn"]
    for _ in range(600):
        turn = stack.http.get(f"/v1/turns/{turn['id']}").json()["turn"]
        if turn["state"] in ("answered", "error"):
            break
        time.sleep(0.1)
    assert turn["state"] == "answered", turn
    turns = stack.http.get(f"/v1/threads/{turn['thread_id']}/turns").json()["turns"]
    reply = next(t for t in turns if t["role"] == "assistant")
    assert reply["text"].rstrip().endswith(DIFFER), reply
    bundle = stack.http.get(f"/v1/evidence/{reply['id']}").json()
    assert [c["ref"] for c in bundle["citations"]] == ["[[Deposit call]]", "[[Graham email]]"]


def test_no_contradiction_before_the_other_note_was_written(stack: Stack) -> None:
    # As of 15 March 2026 the email (written 10 April) was not in memory: the same answer, alone.
    asked = stack.json("ask", QUESTION, "--as-of", "2026-03-15")
    assert asked["as_of"] == "2026-03-15"
    assert asked["answer"] == ANSWER and "differ" not in asked["answer"]
    assert [c["ref"] for c in asked["citations"]] == ["[[Deposit call]]"]


# -- records and beliefs as of a day --------------------------------------------------------------


def test_records_as_of_a_day_are_the_versions_that_held_then(stack: Stack) -> None:
    yesterday = _days_ago(1)
    # Written today: as of yesterday there was no record, no person, nothing in the inbox.
    assert stack.json("query", "entities", "--as-of", yesterday)["records"] == []
    assert stack.json("inbox", "--as-of", yesterday)["items"] == []
    missing = stack.memex("timeline", "Ron Whitaker", "--as-of", yesterday, "--json")
    assert missing.returncode == 4 and "NOT_FOUND" in missing.stderr, missing.stderr
    assert _by_id(stack.json("query", "entities")["records"])["ron-whitaker"]["description"] == (
        RON_THEN
    )

    # Changed: Ron's role, and the rent paid (done items leave the inbox).
    _write_records(stack.vault, RON_NOW, "done")
    again = stack.json("index", str(stack.vault))
    assert again["recordsUpserted"] == 2, again
    # Written a month ago, changed a week ago.
    for ref in ("entities:ron-whitaker", "inbox:inbox-rent"):
        _backdate(stack, ref, changed_days_ago=7, first_days_ago=30)

    then, before = _days_ago(14), _days_ago(40)
    old = stack.json("query", "entities", "--as-of", then)["records"]
    assert [r["id"] for r in old] == ["ron-whitaker"]  # under its own id, the version of then
    assert old[0]["fields"]["description"] == RON_THEN
    assert _by_id(stack.json("query", "entities")["records"])["ron-whitaker"]["description"] == (
        RON_NOW
    )
    assert stack.json("query", "entities", "--as-of", _days_ago(3))["records"][0]["fields"][
        "description"
    ] == (RON_NOW)
    assert stack.json("query", "entities", "--as-of", before)["records"] == []

    assert [i["id"] for i in stack.json("inbox", "--as-of", then)["items"]] == ["inbox-rent"]
    assert stack.json("inbox")["items"] == []
    timeline = stack.json("timeline", "Ron", "--as-of", then)
    assert timeline["entity"]["fields"]["description"] == RON_THEN

    over_http = stack.http.post("/v1/records/query", json={"collection": "entities", "as_of": then})
    assert over_http.status_code == 200, over_http.text
    assert over_http.json()["records"][0]["fields"]["description"] == RON_THEN
    inbox = stack.http.get("/v1/inbox", params={"as_of": then})
    assert inbox.status_code == 200 and [i["id"] for i in inbox.json()["items"]] == ["inbox-rent"]
    assert stack.http.get("/v1/people/Ron/timeline", params={"as_of": before}).status_code == 404


def test_beliefs_as_of_a_day_are_as_they_were_then(stack: Stack) -> None:
    made = stack.json("reflect", "--since", "2026-10-05", "--until", "2026-10-05")
    ids = {b["statement"]: b["id"] for b in made["beliefs"]}
    assert set(ids) == {RUNS, ALONE}, made
    runs, alone = ids[RUNS], ids[ALONE]
    assert stack.http.post(f"/v1/beliefs/{runs}/confirm").json()["confirmed"] is True
    assert stack.http.post(f"/v1/beliefs/{alone}/reject").json()["status"] == "rejected"
    # Derived three weeks ago, reviewed a week ago.
    for belief_id in (runs, alone):
        _backdate(stack, f"beliefs:{belief_id}", changed_days_ago=7, first_days_ago=21)

    then = stack.json("query", "beliefs", "--as-of", _days_ago(14))["records"]
    held = {i: f for i, f in _by_id(then).items() if f.get("derived_by") == "reflect"}
    assert {i: (f["status"], f["confirmed"]) for i, f in held.items()} == {
        runs: ("active", False),
        alone: ("active", False),
    }
    now = _by_id(stack.json("query", "beliefs")["records"])
    assert (now[runs]["status"], now[runs]["confirmed"]) == ("active", True)
    assert now[alone]["status"] == "rejected"
    earlier = _by_id(stack.json("query", "beliefs", "--as-of", _days_ago(28))["records"])
    assert runs not in earlier and alone not in earlier

    # Search's beliefs channel loads active beliefs only: the rejected one only as of the weeks it
    # was active, cited as the version that held then (an earlier version by its own id).
    def found(*args: str) -> set[str]:
        hits = stack.json("search", "running alone", "--channels", "beliefs", *args)["items"]
        return {h["citation"] for h in hits}

    assert {f"beliefs:{runs}@v1", f"beliefs:{alone}@v1"} <= found("--as-of", _days_ago(14))
    today = found()
    assert f"beliefs:{runs}" in today and not any(alone in c for c in today), today


# -- reviewing beliefs ----------------------------------------------------------------------------


def test_confirm_reject_and_a_rejected_belief_is_not_derived_again(stack: Stack) -> None:
    window = ("--since", "2026-11-20", "--until", "2026-11-20")  # the Allotment note alone
    first = stack.json("reflect", *window)
    assert (first["episodes_read"], first["proposed"], first["unreadable"]) == (1, 2, 0)
    # One call reads the note; one more asks about earlier beliefs where the tests before made any.
    assert first["model_calls"] in (1, 2)
    made = {b["statement"]: b for b in first["beliefs"]}
    assert set(made) == {WATERS, TEA}
    assert all(b["status"] == "active" and not b["confirmed"] for b in made.values())
    assert all(e["support"] == "verbatim" for b in made.values() for e in b["evidence"])
    waters, tea = made[WATERS]["id"], made[TEA]["id"]

    confirmed = stack.http.post(f"/v1/beliefs/{waters}/confirm")
    assert confirmed.status_code == 200, confirmed.text
    assert (confirmed.json()["status"], confirmed.json()["confirmed"]) == ("active", True)
    rejected = stack.memex("beliefs", "reject", tea)
    assert rejected.returncode == 0 and "[rejected]" in rejected.stdout, rejected.stderr
    listed = {b["id"]: b for b in stack.http.get("/v1/beliefs").json()["beliefs"]}
    assert listed[waters]["confirmed"] and tea not in listed
    shown = {b["id"]: b for b in stack.json("beliefs", "list", "--include-rejected")}
    assert shown[tea]["status"] == "rejected"

    # The same conclusion on the same evidence: dropped; the confirmed one keeps its confirmation.
    second = stack.json("reflect", *window)
    assert (second["proposed"], second["dropped_rejected"]) == (2, 1), second
    assert [(b["id"], b["confirmed"]) for b in second["beliefs"]] == [(waters, True)]
    shown = {b["id"]: b for b in stack.json("beliefs", "list", "--include-rejected")}
    assert shown[tea]["status"] == "rejected" and shown[waters]["confirmed"]

    # A newer note that supports it lets it back: the evidence of both notes, active again.
    third = stack.json("reflect", "--since", "2026-11-20", "--until", "2026-11-27")
    assert third["episodes_read"] == 2 and third["dropped_rejected"] == 0, third
    [back] = third["beliefs"]
    assert back["id"] == tea and back["status"] == "active" and not back["confirmed"]
    assert [(e["title"], e["support"]) for e in back["evidence"]] == [
        ("Allotment", "verbatim"),
        ("Allotment diary", "verbatim"),
    ]
    assert tea in {b["id"] for b in stack.http.get("/v1/beliefs").json()["beliefs"]}
