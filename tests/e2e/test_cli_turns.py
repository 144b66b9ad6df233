"""Queued turns from the terminal on the real stack (issue 37): `memex turn` queues a question,
follows it on WatchThread while the stack's chat worker (another process) answers it with the
tiny model, then `memex threads` lists and shows the thread and `memex forget thread` forgets it.
On the shared demo stack: the thread is this test's own and is gone at the end."""

from __future__ import annotations

import json

import pytest

from .conftest import DemoStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

QUESTION = "How much does the allotment plot cost?"


def test_queue_follow_list_and_forget_a_thread_from_the_cli(demo_stack: DemoStack) -> None:
    followed = demo_stack.memex("turn", QUESTION, "--json")
    assert followed.returncode == 0, followed.stderr
    reply = json.loads(followed.stdout)
    question, answer = reply["turn"], reply["answer"]
    assert (question["text"], question["state"]) == (QUESTION, "answered"), reply
    assert answer["role"] == "assistant" and answer["text"].strip(), reply
    thread = question["thread_id"]
    states = followed.stderr.splitlines()
    assert states[0] == f"queued turn {question['id']} in thread {thread}: pending", states
    assert "answered" in states, states

    listed = demo_stack.memex("threads", "--json")
    assert listed.returncode == 0, listed.stderr
    assert thread in [t["id"] for t in json.loads(listed.stdout)["threads"]]
    shown = demo_stack.memex("threads", thread)
    assert shown.returncode == 0, shown.stderr
    assert f"you> {QUESTION}  [answered]  ({question['id']})" in shown.stdout
    assert f"({answer['id']})" in shown.stdout

    forgot = demo_stack.memex("forget", "thread", thread, "--yes")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    assert "0 remaining in every store." in forgot.stdout
    gone = demo_stack.memex("threads", thread)
    assert gone.returncode == 4 and f"no thread {thread!r}" in gone.stderr
    again = demo_stack.memex("turn", "and the shed?", "--thread", thread)
    assert again.returncode == 4 and "`memex threads` lists them" in again.stderr
