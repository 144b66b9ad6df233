"""Wikilinks as retrieval reads them and as the orchestrator shows them to a model."""

from __future__ import annotations

from memex.shared.wikilinks import WikiLink, find_wikilinks, replace_wikilinks


def test_every_form_of_link_is_read_with_its_parts() -> None:
    text = (
        "See [[Flat Deposit]], [[Allotment#Rent | the rent]], ![[receipt.png]], "
        "[[#Costs]] and \\[[not a link]]."
    )
    assert list(find_wikilinks(text)) == [
        WikiLink("Flat Deposit", "", "", embed=False),
        WikiLink("Allotment", "Rent", "the rent", embed=False),
        WikiLink("receipt.png", "", "", embed=True),
        WikiLink("", "Costs", "", embed=False),
    ]


def test_a_link_never_spans_lines_or_nests() -> None:
    assert list(find_wikilinks("[[half\nlink]] [[a [[b]]")) == [WikiLink("b", "", "", False)]


def test_links_become_the_words_a_reader_sees() -> None:
    text = "Paid [[Graham Hill|Graham]] per [[Flat Deposit#Terms]]; see [[#Costs]]. ![[scan.pdf]]"
    shown = replace_wikilinks(text, lambda link: "" if link.embed else link.words)
    assert shown == "Paid Graham per Flat Deposit; see Costs. "


def test_markdown_links_to_notes_are_links_and_web_addresses_are_not() -> None:
    text = (
        "Paid [the deposit](../home/Flat%20Deposit%20Agreement.md#Terms), "
        '[Ron](<people/Ron Whitaker.md> "Ron"), ![](receipt.png), '
        "[the council](https://leeds.gov.uk/tax) and [mail](mailto:a@b.c)."
    )
    assert list(find_wikilinks(text)) == [
        WikiLink("../home/Flat Deposit Agreement", "Terms", "the deposit", embed=False),
        WikiLink("people/Ron Whitaker", "", "Ron", embed=False),
        WikiLink("receipt.png", "", "", embed=True),
    ]
    shown = replace_wikilinks(text, lambda link: "" if link.embed else link.words)
    assert shown == (
        "Paid the deposit, Ron, , [the council](https://leeds.gov.uk/tax) and [mail](mailto:a@b.c)."
    )
