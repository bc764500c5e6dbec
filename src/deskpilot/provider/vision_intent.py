"""The only source of vision-bridge rules: what counts as an image-understanding request, which
tools can answer one, and in what order of preference.

A text-only model cannot see pixels. Selection, the fail-closed gate before the first request
and the refusal repair must all agree on these rules, or a screenshot task drifts between "show
the path to ``read``" and "answer that images cannot be viewed". The rules are generic: tool
names and user wording only, nothing of the desktop.

Detection reads user text only (the window ``continuation.ranking_window`` picked; the caller
passes it in so this module stays below ``tools``). It triggers on

* an image path or file name (``.png .jpg .jpeg .webp .gif .bmp .tif .tiff .heic .svg``,
  quoted or not), unless it only names a file to produce ("save the plot to out.png") and no
  intent phrase is present; clipboard-image file names carry their own reason code;
* intent phrases in English ("screenshot", "OCR", "what does the screen show", "look at /
  read / analyse / describe the image", "text in the picture", "pasted image") and Chinese
  (截图, 截屏, 看图, 读图, 识图, 识别图片, 图片里, 屏幕上显示什么, 剪贴板里的图片, ...).

It does not trigger on a bare extension word ("write a png encoder"), other extensions
(``README.md``), or "image" used as a thing that is not a picture ("the image package version",
"inspect the docker image"): an image noun followed by package/version/tag/... or preceded by
docker/container/disk/... does not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

IMAGE_EXTENSIONS = ("png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff", "heic", "svg")
# Semantic vision tools, best first; ``image_review`` (a human looks) only when none exists.
VISION_TOOL_PREFERENCE = ("vision_read", "image_analyze", "image_ocr", "ocr_image", "image_to_text")
REVIEW_TOOL = "image_review"
VISION_TOOLS = frozenset({*VISION_TOOL_PREFERENCE, REVIEW_TOOL})
# Tools that would take an image path as a text file instead of looking at it.
FILE_TOOLS = frozenset({"read", "bash", "grep", "find", "ls"})

_EXT = "|".join(IMAGE_EXTENSIONS)
_QUOTED_PATH = re.compile(rf"[\"'`“‘]([^\"'`”’\n]{{0,400}}?[^\s\"'`]\.(?:{_EXT}))[\"'`”’]", re.I)
# An unquoted path is found from its extension backwards (linear; no backtracking regex).
_EXT_AT = re.compile(rf"\.(?:{_EXT})(?![A-Za-z0-9_-]|\.[A-Za-z0-9])", re.I)
_STEM_CHAR = re.compile(r"[\w\-./\\:~@\u4e00-\u9fff]")
PATH_MAX_CHARS = 400
_CLIPBOARD_NAME = re.compile(r"clipboard|剪贴板|粘贴", re.I)
_PRODUCE_BEFORE = re.compile(
    r"\b(?:save[sd]?|saving|write|writes|writing|export(?:s|ed|ing)?|generat(?:e|es|ed|ing)|"
    r"creat(?:e|es|ed|ing)|render(?:s|ed|ing)?|output(?:s|ting)?|produc(?:e|es|ed|ing)|"
    r"plot(?:s|ted|ting)?|draw(?:s|ing)?|convert(?:s|ed|ing)?\s+.{0,40}\bto)\b"
    r"|保存|生成|导出|输出|写入|画",
    re.I,
)
_STATE_ID = re.compile(r"\bstate[_ ]?id\b[\"'`]?\s*[=:]\s*[\"'`]?([A-Za-z0-9][\w-]{2,80})", re.I)

# "image" as something that is not a picture: removed before the intent phrases run.
_NOT_A_PICTURE = re.compile(
    r"\b(?:docker|podman|container|oci|disk|iso|vm|virtual\s+machine|base|system|boot|kernel|"
    r"firmware|cloud|ami|qcow2?)\s+images?\b",
    re.I | re.A,
)
_NOUN = r"(?:images?|pictures?|photos?|pics?|screenshots?|screen|diagrams?|charts?|figures?)"
_NOT_AFTER = (
    r"(?!\s*(?:package|packages|library|libraries|lib|crate|module|version|versions|tag|tags|"
    r"name|registry|repo|repository|build|layer|layers|id|digest|format|encoder|decoder|size|"
    r"url|field|type|class|component|width|height|resolution|pull|push|file\s+format)\b)"
)
_DET = r"(?:(?:the|this|that|my|an?|these|those|attached|following|uploaded|pasted|current)\s+)*"
_INTENT_EN = re.compile(
    "|".join(
        [
            r"\bscreen\s?shots?\b",
            r"\bscreen\s?(?:caps?|captures?|grabs?)\b",
            r"\bocr(?:ed|ing)?\b",
            r"\bwhat(?:'s|\s+is|\s+are|\s+does|\s+do)?\s+(?:(?:shown|visible|displayed|written)\s+)?"
            rf"(?:in|on)?\s*(?:the|this|that|my|these|those)\s+{_NOUN}\b{_NOT_AFTER}",
            rf"\bwhat\s+(?:the|this|that|my)\s+{_NOUN}\s+(?:shows?|says?|contains?|displays?|"
            r"depicts?|looks\s+like)\b",
            r"\b(?:look(?:ing)?\s+at|read|analy[sz]e|describe|view|see|inspect|check|examine|"
            r"interpret|transcribe|caption|summari[sz]e|understand|recogni[sz]e|identify|"
            rf"extract\s+(?:the\s+)?text\s+from)\s+{_DET}{_NOUN}\b{_NOT_AFTER}",
            rf"\b(?:text|words|numbers|content|contents)\s+(?:in|on|from|of)\s+{_DET}{_NOUN}\b"
            rf"{_NOT_AFTER}",
            r"\b(?:attached|uploaded|pasted|clipboard)\s+(?:images?|pictures?|photos?|screenshots?)\b",
            r"\b(?:image|picture|photo)\s+(?:understanding|recognition|description|captioning|"
            r"analysis)\b",
            r"\b(?:text|character|optical\s+character)\s+recognition\b",
        ]
    ),
    re.I | re.A,
)
_PIC_ZH = r"(?:图片|图像|照片|截图|截屏|屏幕(?:内容)?|这张图|那张图|该图|此图)"
_INTENT_ZH = re.compile(
    "|".join(
        [
            r"截图|截屏|屏幕快照",
            r"看图|读图|识图",
            r"(?:看|读|识别|分析|描述|解读|查看|理解|检查|解析|辨认|提取|看看|瞧瞧)(?:一下|下)?"
            rf"(?:这|那|该|此|上面的|下面的|附件里?的)?(?:一)?[张幅个份]?{_PIC_ZH}",
            r"(?:图片|图像|照片|截图|这张图|那张图)(?:里|中|上|内)",
            r"(?:文字|图片|图像|图形)识别|(?:图片|图像)理解",
            r"屏幕上?(?:显示|有|是)(?:了|的)?(?:什么|啥|哪些)",
            r"剪贴板(?:里|中|上)?的?(?:图片|截图|图)",
        ]
    )
)


@dataclass(frozen=True, slots=True)
class VisionIntent:
    """Whether the request needs image understanding, why (reason codes), and what it names.

    ``paths`` and ``state_ids`` are taken from the user's own text so a repair can tell the
    model which argument to pass; they never reach telemetry.
    """

    image_task: bool = False
    reasons: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    state_ids: tuple[str, ...] = ()

    @property
    def has_path(self) -> bool:
        return bool(self.paths)


NO_VISION = VisionIntent()


def _bare_paths(text: str) -> list[str]:
    out: list[str] = []
    for match in _EXT_AT.finditer(text):
        start = match.start()
        floor = max(0, start - PATH_MAX_CHARS)
        while start > floor and _STEM_CHAR.match(text[start - 1]):
            start -= 1
        path = text[start : match.end()].lstrip(":")
        stem = path[: -len(match.group(0))]
        # a stem must end in a name character: "*.png" and " .png" are globs, not files
        if stem and (stem[-1].isalnum() or stem[-1] in "_-") and not text[:start].endswith("*"):
            out.append(path)
    return out


def image_paths(text: str) -> list[str]:
    """Image paths or file names in ``text``, in order, without duplicates."""
    found: list[str] = []
    quoted = [m.group(1).strip() for m in _QUOTED_PATH.finditer(text)]
    for path in [*quoted, *_bare_paths(text)]:
        if path and path not in found and not any(path in f for f in found):
            found.append(path)
    return found


def _produced_only(text: str, path: str) -> bool:
    """The path is the object of a verb that makes a file ("save the chart to a.png")."""
    at = text.find(path)
    before = text[max(0, at - 80) : at]
    clause = re.split(r"[.;!?\n。；！？]", before)[-1]
    return bool(_PRODUCE_BEFORE.search(clause))


def has_intent(text: str) -> tuple[str, ...]:
    """Reason codes of the intent phrases in ``text`` (empty: none)."""
    reasons: list[str] = []
    plain = _NOT_A_PICTURE.sub(" ", text)
    if _INTENT_EN.search(plain):
        reasons.append("vision_intent_en")
    if _INTENT_ZH.search(plain):
        reasons.append("vision_intent_zh")
    return tuple(reasons)


def detect(texts: Sequence[str]) -> VisionIntent:
    """Detect an image-understanding request in the user texts of the ranking window."""
    text = "\n".join(t for t in texts if t)
    if not text.strip():
        return NO_VISION
    reasons = list(has_intent(text))
    paths = image_paths(text)
    if not reasons:
        paths = [p for p in paths if not _produced_only(text, p)]
    if paths:
        reasons.append("image_path")
        if any(_CLIPBOARD_NAME.search(p) for p in paths):
            reasons.append("clipboard_image")
    if not reasons:
        return NO_VISION
    state_ids = tuple(dict.fromkeys(m.group(1) for m in _STATE_ID.finditer(text)))
    return VisionIntent(True, tuple(reasons), tuple(paths), state_ids)


def preferred_vision_tools(names: Iterable[str]) -> tuple[str, ...]:
    """The vision tools among ``names``, best first: semantic tools by preference, and
    ``image_review`` only when no semantic tool is among them."""
    present = {n.lower(): n for n in names}
    semantic = tuple(present[t] for t in VISION_TOOL_PREFERENCE if t in present)
    if semantic:
        return semantic
    return (present[REVIEW_TOOL],) if REVIEW_TOOL in present else ()


def is_vision_tool(name: str) -> bool:
    return name.lower() in VISION_TOOLS


def is_file_tool(name: str) -> bool:
    return name.lower() in FILE_TOOLS
