"""LibreOffice Writer through the official TypeScript MCP SDK (the app matrix's Writer row).

Read: the fixture document's paragraphs with their text, the caret, one menu bar (LibreOffice
exports its menu bar twice, VCL's at height 0), the status bar, checked states. Act: select a
word with ``select_text`` (the result says what it selected), make it bold with the toolbar's
Bold by element id (the result shows Bold checked: LibreOffice updates it ~330 ms after the
change), save with Ctrl+S; the saved file's content.xml has the word in a bold span.

LibreOffice starts once for the module (it is slow to start); the chain's test runs last.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from libreoffice_kit import libreoffice, make_document, needs_writer

pytestmark = [pytest.mark.desktop, needs_writer]

PARAGRAPHS = [
    "Quarterly report",
    "",  # a blank line: on screen, so in the tree (trial-6 could not see one)
    "The quick brown fox jumps over the lazy dog.",
    "Second paragraph with some words in it.",
    "Third paragraph closes the document.",
]
TEXT_LIMIT = 20_000  # the whole state text: Writer's tree is longer than ts_calls' default


@pytest.fixture(scope="module")
def writer(dp_desktop: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("writer")
    doc = make_document(folder, "report", PARAGRAPHS)
    with libreoffice(doc, folder / "profile"):
        yield doc


def _config() -> dict[str, Any]:
    return {**stdio_config(), "textLimit": TEXT_LIMIT}


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _tree(text: str) -> str:
    return text[text.index("\n- window ") + 1 :]


def _paragraphs(tree: str) -> list[str]:
    """The tree's paragraph lines, stripped."""
    return [line.strip() for line in tree.splitlines() if line.strip().startswith("- paragraph ")]


def _type_into(paragraph: str, text: str) -> dict[str, Any]:
    """A type_text call into the paragraph whose text starts with ``paragraph``."""
    element = f'$element:paragraph = "{paragraph}'
    return {
        "name": "type_text",
        "arguments": {"state_id": "$state", "element_id": element, "text": text},
    }


async def test_writer_shows_its_paragraphs_caret_and_status(writer: Path) -> None:
    report = await run_ts_script(
        TS_CALLS,
        _config(),
        json.dumps([{"name": "get_app_state", "arguments": {"app": "soffice"}}]),
    )
    tree = _tree(_ok(report["results"][0]))
    paragraphs = _paragraphs(tree)
    assert [p.split('"')[1] for p in paragraphs] == PARAGRAPHS, tree
    # the caret is in the first paragraph when a document opens; one line has it
    assert sum("[caret " in p for p in paragraphs) == 1, tree
    assert "[caret 0]" in paragraphs[0], tree
    assert re.search(r'^\s*- document "report - LibreOffice Document"', tree, re.M), tree
    # one menu bar (VCL's own, at height 0, is not on screen)
    assert len(re.findall(r"^\s*- menuBar \[", tree, re.M)) == 1, tree
    # the status bar's labels hold their text in the Text interface only
    assert re.search(r'^\s*- statusBar \[\d+\]\n\s*- label "Page 1 of 1"', tree, re.M), tree
    assert re.search(r'- label "\d+ words, \d+ characters"', tree), tree
    # the Formatting toolbar's GTK combo boxes are named by the toolbar items they sit on
    for name in ("Paragraph Style", "Font Name", "Font Size"):
        assert re.search(rf'- textField "{name}" = "[^"]+"', tree), tree
    # checkable toolbar buttons say whether they are checked
    assert re.search(r'- toggleButton "Bold" \[unchecked\]', tree), tree
    assert re.search(r'- toggleButton "Left" \[checked\]', tree), tree


async def test_typing_into_a_paragraph_without_the_caret_goes_at_its_end(writer: Path) -> None:
    """The paragraph named by id, not the one the caret is in, gets the text, at its end: a
    focus grab puts Writer's caret at the paragraph's start, and a trial's " (draft)" went
    before "Meeting notes" with "effect confirmed". Both ways in: InsertText, and keys (a new
    line makes a new paragraph, so it goes as the Return key)."""
    calls = [
        {"name": "get_app_state", "arguments": {"app": "soffice"}},
        _type_into("Third paragraph", " (draft)"),
        _type_into("Second paragraph", "\nAppendix"),
        _type_into("Quarterly report", " 2026"),
    ]
    report = await run_ts_script(TS_CALLS, _config(), json.dumps(calls))
    _state, semantic, keys, title = report["results"]
    tree = _tree(_ok(semantic))
    assert '- paragraph = "Third paragraph closes the document. (draft)"' in tree, tree
    assert semantic["diagnostic"]["effect"] == "confirmed", semantic["diagnostic"]
    paragraphs = [line.split('"')[1] for line in _paragraphs(_tree(_ok(keys)))]
    assert paragraphs == [
        PARAGRAPHS[0],
        "",
        PARAGRAPHS[2],
        "Second paragraph with some words in it.",
        "Appendix",
        "Third paragraph closes the document. (draft)",
    ], paragraphs
    # one paragraph has the keyboard: the one typed into last (Writer left FOCUSED on the
    # paragraph Enter had made)
    focused = [line for line in _paragraphs(_tree(_ok(title))) if "[focused]" in line]
    assert len(focused) == 1 and "Quarterly report 2026" in focused[0], focused


async def test_select_a_word_make_it_bold_and_save(writer: Path) -> None:
    before = await asyncio.to_thread(lambda: writer.stat().st_mtime_ns)
    calls = [
        {"name": "get_app_state", "arguments": {"app": "soffice"}},
        {
            "name": "select_text",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:paragraph = "The quick brown fox',
                "start": 10,
                "end": 15,
            },
        },
        {
            "name": "click",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:toggleButton "Bold" [unchecked]',
            },
        },
        {
            "name": "select_text",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:paragraph = "The quick brown fox',
                "start": 4,
                "end": 9,
            },
        },
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["ctrl+s"]}},
    ]
    report = await run_ts_script(TS_CALLS, _config(), json.dumps(calls))
    _state, selected, bold, plain, saved = report["results"]
    said = _ok(selected)
    assert re.search(r'^Selected characters 10-15 of element \d+: "brown"\.$', said, re.M), said
    fox = next(line for line in _tree(said).splitlines() if "The quick brown fox" in line)
    assert '[selection 10-15: "brown"]' in fox, fox
    # the result's Bold is checked: read after LibreOffice's late state update
    assert re.search(r'- toggleButton "Bold" (\[focused\] )?\[checked\]', _ok(bold)), bold
    # "quick" is not bold: the result says so at once, though LibreOffice updates its
    # toolbar only ~330 ms after the selection (host/settle.py)
    bolds = [line for line in _ok(plain).splitlines() if 'toggleButton "Bold"' in line]
    assert bolds and all("[unchecked]" in line for line in bolds), (bolds, plain["text"][:400])
    _ok(saved)
    # the save is confirmed by the file: the one Writer was started with, named by its title
    assert saved["diagnostic"]["effect"] == "confirmed", saved["diagnostic"]
    content = await asyncio.to_thread(_saved_content, writer, before)
    assert re.search(r"<text:span text:style-name=\"(T\d+)\">brown</text:span>", content), content
    style = re.search(r'<text:span text:style-name="(T\d+)">brown</text:span>', content)
    assert style is not None
    rule = re.search(
        rf'<style:style style:name="{style.group(1)}"[^>]*>.*?</style:style>', content, re.S
    )
    assert rule is not None and 'fo:font-weight="bold"' in rule.group(0), content


def _saved_content(path: Path, before: int, timeout: float = 20) -> str:
    """content.xml of the document once LibreOffice has written it again."""
    deadline = time.monotonic() + timeout
    while True:
        if path.stat().st_mtime_ns != before:
            try:
                with zipfile.ZipFile(path) as z:
                    return z.read("content.xml").decode()
            except (zipfile.BadZipFile, KeyError):
                pass  # still being written
        assert time.monotonic() < deadline, "the document was not saved"
        time.sleep(0.1)  # a poll for the file, in a worker thread
