"""What a newcomer reads in a real kernel, in plain words: ``%gemini help`` without reST markup,
``%gemini prices`` with its sources as a few numbered notes wrapped between words, ``%gemini status``
naming the notebook a record belongs to, and a footer whose every word its legend explains."""

from __future__ import annotations

import html
import re

import pytest
from helpers.footer import footer_line
from helpers.kernel import notebook_kernel

from genai_magics import messages
from genai_magics.engine.context import SECONDARY_FIELD
from genai_magics.gemini.pricing import BILLING_DAY_SOURCE, NOTE_WIDTH, PRICES, price_notes

pytestmark = pytest.mark.kernel

CODE = "def parse(s):\n    return int(s)"


def test_gemini_help_is_plain_text(kernel):
    shown = kernel.run("%gemini help", cell_id="h").stdout
    assert "::" not in shown and "<{" not in shown and "{status," not in shown  # reST and argparse's choices
    assert shown.startswith("usage: %gemini [COMMAND]")
    assert "%gemini prices [MODEL]" in shown and "--conversation NAME" in shown


def test_gemini_prices_fits_its_width_and_names_each_source_once(kernel):
    shown = kernel.run("%gemini prices", cell_id="p").stdout
    lines = shown.rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= 100  # no line an output area wraps in the middle of a word
    at = lines.index(messages.PRICES_SOURCES.render())
    rows = [line for line in lines[1:at] if line[2:].startswith("gemini")]
    notes: dict[str, str] = {}  # number -> the note, its wrapped lines joined again
    for line in lines[at + 1 :]:
        if found := re.match(r"  \[(\d+)\] (.*)", line):
            notes[found.group(1)] = found.group(2)
        else:
            assert line.startswith(" " * 6), line
            last = list(notes)[-1]
            notes[last] += " " + line.strip()
    assert all(len(line) <= NOTE_WIDTH for line in lines[at + 1 :])
    # each note once, whole (wrapped only between words): Google's pricing page, the note for the models it does
    # not list, the billing day's; every row points at its own
    expected = {n for name, held in PRICES.items() for p in held for n in price_notes(name, p)}
    expected.add(messages.PRICES_DAY_SOURCE.render(source=BILLING_DAY_SOURCE))
    assert sorted(notes.values()) == sorted(expected) and len(notes) == 3
    for (name, held), row_group in zip(PRICES.items(), _by_model(rows), strict=True):
        for period, row in zip(held, row_group, strict=True):
            marks = re.search(r"  ((?:\d+ ?)+)$", row).group(1).split()
            assert [notes[m] for m in marks] == price_notes(name, period), (name, row)


def _by_model(rows: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(row[2:].split()[0], []).append(row)
    return list(groups.values())


def test_gemini_status_names_the_notebook_its_record_belongs_to(stub, tmp_path):
    stub.reset()
    nb = tmp_path / "analysis.ipynb"
    k = notebook_kernel(stub, nb)
    try:
        k.run(CODE, cell_id="a")
        k.run("%%gemini_ask\nWhat does it do?", cell_id="m")
        status = k.run("%gemini status", cell_id="s").stdout.splitlines()
        [line] = [s for s in status if messages.RECORD_AT.matches(s)]
        assert messages.RECORD_AT.parse(line)["notebook"] == str(nb)
    finally:
        k.close()


def test_every_word_of_the_footer_is_in_its_legend(kernel):
    """The footers of a first ask (the code, the other cells, an output sent), a follow-up (all held), an
    edit and an agent turn: no payload field name, and each word the legend on hover explains."""
    kernel.run("print('hello')\nx = 1", cell_id="other")
    kernel.run(CODE + "\nprint(parse('4'))", cell_id="a")
    runs = [
        kernel.run("%%gemini_ask\nWhat does it do?", cell_id="m1"),
        kernel.run("%%gemini_ask\nAnd why int?", cell_id="m2"),
        kernel.run("%%gemini_edit\nAdd validation.", cell_id="m3"),
        kernel.run("%%gemini_agent\nCheck that it runs.", cell_id="m4"),
    ]
    for run in runs:
        footer = footer_line(run.plain)
        assert SECONDARY_FIELD not in footer and "synchronized" not in footer
        legend = html.unescape(_legend_of(run))
        words = set(re.findall(r"[A-Za-z][\w'-]*", legend))
        for piece in footer.split(messages.FOOTER_SEPARATOR):
            if piece.startswith("gemini-"):  # the model's name
                continue
            piece = re.sub(r"In\[\d+\]", "", piece)  # a cell's label
            unexplained = set(re.findall(r"[A-Za-z][\w'-]*", piece)) - words
            assert not unexplained, (piece, unexplained)


def _legend_of(run) -> str:
    """The footer's hover text: the title of its HTML."""
    for m in run.messages:
        data = m["content"].get("data", {})
        if 'title="' in data.get("text/html", "") and messages.FOOTER_TURN.within(data.get("text/plain", "")):
            return re.search(r'title="([^"]*)"', data["text/html"]).group(1)
    raise AssertionError("no footer with a legend")
