"""Ask's sensitive notes (SPEC B3; issue 11): withheld from a remote reasoner always, from a
local one unless the ask asked for them (and the setting allows), and said so in the answer."""

from __future__ import annotations

from pathlib import Path

from .fakes import NOTES, FakeMemory, make_orchestrator, reasoner


async def test_sensitive_items_are_withheld_from_a_remote_reasoner(tmp_path: Path) -> None:
    model = reasoner(local=False)
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "how am I?"
    )
    prompt = model.calls[0].messages[-1].content
    assert "panic" not in prompt
    assert "£800" in prompt
    assert result.withheld == 1
    assert result.answer.endswith("\n\n_(1 sensitive source withheld from the cloud answer.)_")


async def test_a_local_reasoner_sees_sensitive_items_unless_the_setting_says_no(
    tmp_path: Path,
) -> None:
    model = reasoner()
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "how am I?", include_sensitive=True
    )
    assert "panic" in model.calls[0].messages[-1].content and result.withheld == 0

    model = reasoner()
    o = make_orchestrator(tmp_path / "b", model, FakeMemory(NOTES), local_sees_sensitive=False)
    result = await o.asker.ask("me", "how am I?", include_sensitive=True)  # asked, yet the setting
    assert "panic" not in model.calls[0].messages[-1].content and result.withheld == 1


async def test_an_ask_that_did_not_ask_for_sensitive_notes_withholds_them_from_a_local_model(
    tmp_path: Path,
) -> None:
    """Issue 11: an answer is a read. Its text and quotes go to whoever called (perhaps a cloud
    model over MCP), so a sensitive note reaches even a local model only when asked for."""
    model = reasoner(["The deposit is £800 [1]. You talked through the panic attacks [3]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did I talk about, and what is the deposit?")
    prompt = " ".join(m.content for c in model.calls for m in c.messages)
    assert "panic" not in prompt and "Therapy" not in prompt  # the model never saw it
    assert "£800" in prompt
    assert result.withheld == 1
    assert result.answer.endswith("\n\n_(1 sensitive source withheld from this answer.)_")
    assert all(c.episode_id != "ep-therapy" for c in result.citations)
    assert "[[Therapy]]" not in result.answer

    model = reasoner(["You talked through the panic attacks [3]."])
    o = make_orchestrator(tmp_path / "b", model, FakeMemory(NOTES))
    asked = await o.asker.ask("me", "What did I talk about?", include_sensitive=True)
    assert "panic" in model.calls[0].messages[-1].content and asked.withheld == 0
    assert [c.episode_id for c in asked.citations] == ["ep-therapy"]


async def test_an_ask_finding_only_sensitive_notes_says_they_were_withheld(tmp_path: Path) -> None:
    model = reasoner()
    therapy = [n for n in NOTES if n.sensitive]
    result = await make_orchestrator(tmp_path, model, FakeMemory(therapy)).asker.ask(
        "me", "What did I talk about?"
    )
    assert model.calls == [] and result.abstained and result.abstain_reason == "withheld"
    assert result.answer == (
        "Only sensitive notes match this question, and they were withheld.\n\n"
        "_(1 sensitive source withheld from this answer.)_"
    )
