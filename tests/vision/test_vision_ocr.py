"""The OCR engine on known text drawn with Pillow: the words, where they are, the errors.

Real Debian tesseract through tesserocr; no desktop needed."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from vision_images import Box, draw_text, jpeg, png

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import MIN_CONFIDENCE, OcrEngine, OcrLine, ocr_image, ocr_ready
from deskpilot.vision.ocr import reading_order

TOLERANCE = 3  # px between the box Pillow drew and the box tesseract reports


def _settings_window() -> tuple[Image.Image, dict[str, Box]]:
    img = Image.new("RGB", (900, 560), (236, 236, 236))
    d = ImageDraw.Draw(img)
    boxes = {
        "title": draw_text(d, (330, 18), "Network Preferences", size=22, bold=True),
        "proxy": draw_text(d, (40, 90), "Use a proxy server for this connection", size=18),
        "port": draw_text(d, (40, 140), "Port number 8080", size=18),
        "apply": draw_text(d, (640, 480), "Apply", size=18),
    }
    # a dark status bar with light text: what inverted-text detection is kept on for
    d.rectangle((0, 520, 900, 560), fill=(45, 45, 48))
    boxes["status"] = draw_text(d, (20, 530), "Connected to office", size=16, fill=(240, 240, 240))
    return img, boxes


def _line(lines: tuple[OcrLine, ...], needle: str) -> OcrLine:
    found = [ln for ln in lines if needle in ln.text]
    assert found, f"{needle!r} not read; got {[ln.text for ln in lines]}"
    return found[0]


def _assert_box_near(line: OcrLine, box: Box, tol: float = TOLERANCE) -> None:
    got = (line.x, line.y, line.width, line.height)
    assert all(abs(a - b) <= tol for a, b in zip(got, box, strict=True)), (got, box)


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


async def test_reads_known_lines_with_their_boxes(engine: OcrEngine) -> None:
    img, boxes = _settings_window()
    result = await ocr_image(png(img), engine=engine)
    assert (result.width, result.height) == (900, 560)
    texts = result.text
    for words in ("Network Preferences", "proxy server", "8080", "Apply", "Connected to office"):
        assert words in texts, texts
    _assert_box_near(_line(result.lines, "Preferences"), boxes["title"])
    _assert_box_near(_line(result.lines, "proxy"), boxes["proxy"])
    _assert_box_near(_line(result.lines, "Apply"), boxes["apply"])
    _assert_box_near(_line(result.lines, "office"), boxes["status"])
    assert all(ln.confidence >= MIN_CONFIDENCE for ln in result.lines)
    assert result.elapsed_ms > 0


async def test_reading_order_is_top_to_bottom(engine: OcrEngine) -> None:
    img, _ = _settings_window()
    result = await ocr_image(png(img), engine=engine)
    order = [ln.text for ln in result.lines]
    idx = [next(i for i, t in enumerate(order) if w in t) for w in ("Network", "proxy", "Port")]
    assert idx == sorted(idx), order
    assert "office" in order[-1]


def test_reading_order_groups_a_row_left_to_right() -> None:
    right = OcrLine("Cancel", 90.0, 500, 102, 60, 16)
    left = OcrLine("OK", 90.0, 100, 100, 30, 18)
    below = OcrLine("Details", 90.0, 50, 140, 70, 18)
    assert reading_order([below, right, left]) == [left, right, below]


@pytest.mark.parametrize("factor", [1.5, 0.75])
async def test_boxes_are_in_pixels_of_the_image_given(engine: OcrEngine, factor: float) -> None:
    img, boxes = _settings_window()
    size = (round(img.width * factor), round(img.height * factor))
    scaled = img.resize(size, Image.Resampling.LANCZOS)
    result = await ocr_image(png(scaled), engine=engine)
    assert (result.width, result.height) == size
    x, y, w, h = boxes["proxy"]
    expected = (round(x * factor), round(y * factor), round(w * factor), round(h * factor))
    _assert_box_near(_line(result.lines, "proxy"), expected, tol=TOLERANCE + 2)


async def test_reads_a_jpeg(engine: OcrEngine) -> None:
    img, boxes = _settings_window()
    result = await ocr_image(jpeg(img), engine=engine)
    _assert_box_near(_line(result.lines, "Port number"), boxes["port"])


async def test_evidence_lines_carry_box_confidence_and_text(engine: OcrEngine) -> None:
    img, boxes = _settings_window()
    result = await ocr_image(png(img), engine=engine)
    text = result.evidence(question="what is the port?")
    first, *rest = text.splitlines()
    assert re.fullmatch(
        rf"VISION_READ_OK source=ocr image=900x560 lines={len(result.lines)} elapsedMs=\d+", first
    )
    assert any("question was not used" in ln for ln in rest)
    rows = [ln for ln in rest if ln.startswith("[")]
    assert len(rows) == len(result.lines)
    row = r"\[(\d+),(\d+),(\d+),(\d+)\] (\d+) (.+)"
    m = next(re.fullmatch(row, r) for r in rows if "8080" in r)
    assert m is not None
    x, y, _, _ = boxes["port"]
    assert abs(int(m[1]) - x) <= TOLERANCE and abs(int(m[2]) - y) <= TOLERANCE
    assert "Port number 8080" in m[6]


async def test_a_blank_image_reads_no_lines(engine: OcrEngine) -> None:
    result = await ocr_image(png(Image.new("RGB", (640, 400), (250, 250, 250))), engine=engine)
    assert result.lines == ()
    assert "(no text recognised)" in result.evidence()


async def test_one_engine_serves_concurrent_calls(engine: OcrEngine) -> None:
    img, _ = _settings_window()
    data = png(img)
    first, second = await asyncio.gather(
        ocr_image(data, engine=engine), ocr_image(data, engine=engine)
    )
    assert first.text == second.text
    assert "Network Preferences" in first.text


async def test_the_default_engine_is_loaded_once() -> None:
    img, _ = _settings_window()
    from deskpilot.vision.ocr import default_engine

    assert default_engine() is default_engine()
    result = await ocr_image(png(img))
    assert "Apply" in result.text
    assert default_engine().loaded


async def test_missing_language_names_the_debian_package() -> None:
    with pytest.raises(DeskpilotError) as caught:
        await ocr_image(png(Image.new("L", (50, 50), 255)), engine=OcrEngine(lang="zzz"))
    err = caught.value
    assert err.code is ErrorCode.VISION_UNAVAILABLE
    assert err.details["cause"] == "language_missing"
    assert "tesseract-ocr-zzz" in err.message
    assert "tesseract-ocr tesseract-ocr-eng" in err.message


async def test_missing_tessdata_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(DeskpilotError) as caught:
        await ocr_image(png(Image.new("L", (50, 50), 255)), engine=OcrEngine(tessdata=tmp_path))
    assert caught.value.code is ErrorCode.VISION_UNAVAILABLE
    assert str(tmp_path) in caught.value.message


async def test_not_an_image_is_refused_before_ocr() -> None:
    engine = OcrEngine()
    with pytest.raises(DeskpilotError) as caught:
        await ocr_image(b"%PDF-1.7 this is not a picture", engine=engine)
    assert caught.value.code is ErrorCode.INVALID_REQUEST
    assert not engine.loaded


def test_ocr_ready_says_whether_ocr_can_run(tmp_path: Path) -> None:
    assert ocr_ready()
    assert ocr_ready(OcrEngine())
    assert not ocr_ready(OcrEngine(lang="zzz"))
    assert not ocr_ready(OcrEngine(tessdata=tmp_path))
