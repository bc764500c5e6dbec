"""Reference policies that solve the local cases the way a model would, from the request only.

Each policy is stateless: it reads the user's messages and the tool results in the request
(``reading.Request``) and answers the next step. Nothing is keyed to a request number, so a
policy is right whatever the provider's repairs or the agent's history did in between, and
answers a visible "cannot" when the request lacks what a model would need.
"""

from __future__ import annotations

import json
import re

from deskpilot.smoke.fake_model.reading import Request, Result
from deskpilot.smoke.fake_model.replies import Reply, call, final
from deskpilot.smoke.fake_model.server import Policy

_ACCEPTED = "Plan mode is now disabled"
_PATH = re.compile(r"(/[^\s'\"]+)")
_FOUND = re.compile(r"(?m)^(?:\./)?([\w./-]*settings\.json)\s*$")
_CONTINUES = re.compile(r"read with offset=(\d+)")
_REPAIR = re.compile(r"<dp_repair>.*?(?:</dp_repair>|$)", re.S)


def _own_text(text: str) -> str:
    """What the person wrote in a user message: the provider appends tool results (and its
    repair notes) to the same message."""
    head = text.split("<dp_tool_result>", 1)[0]
    return _REPAIR.sub("", head).strip()


def task_results(request: Request) -> list[Result]:
    """The tool results since the newest message the person wrote (this task's results)."""
    out: list[Result] = []
    for message in request.messages:
        if message.get("role") != "user":
            continue
        text = str(message.get("content") or "")
        if _own_text(text):
            out = []
        out += _blocks(text)
    return out


def _blocks(text: str) -> list[Result]:
    probe = Request({"messages": [{"role": "user", "content": text}]})
    return probe.results()


def latest_user(request: Request) -> str:
    for message in reversed(request.messages):
        own = _own_text(str(message.get("content") or ""))
        if message.get("role") == "user" and own:
            return own
    return ""


def repaired(request: Request) -> bool:
    return any("<dp_repair>" in str(m.get("content") or "") for m in request.messages)


def _of(results: list[Result], tool: str) -> list[Result]:
    return [r for r in results if r.name == tool]


def _project(results: list[Result]) -> dict[str, str]:
    for r in _of(results, "read"):
        body = "\n".join(line.split("\t", 1)[-1] for line in r.text.splitlines()[1:])
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if isinstance(data, dict) and "version" in data:
            return {str(k): str(v) for k, v in data.items()}
    return {}


def _file_value(results: list[Result], key: str) -> str | None:
    for r in _of(results, "read"):
        m = re.search(rf'"{key}":\s*"([^"]+)"', r.text)
        if m:
            return m.group(1)
    return None


def no_tool(request: Request) -> Reply:
    return final("The capital of France is Paris.")


def bash_pwd(request: Request) -> Reply:
    results = task_results(request)
    ran = _of(results, "bash")
    if not ran:
        return call("bash", command="pwd")
    m = _PATH.search(ran[-1].text)
    return final(f"pwd printed {m.group(1)}." if m else "pwd printed nothing I could read.")


def read_project(request: Request) -> Reply:
    results = task_results(request)
    project = _project(results)
    if not project:
        return call("read", path="project.json")
    return final(f"The project is {project.get('name')}, version {project.get('version')}.")


def bash_read(request: Request) -> Reply:
    results = task_results(request)
    if not _of(results, "bash"):
        return call("bash", command="pwd")
    project = _project(results)
    if not project:
        return call("read", path="project.json")
    m = _PATH.search(_of(results, "bash")[-1].text)
    where = m.group(1) if m else "(unknown)"
    return final(f"The directory is {where}; the project's version is {project.get('version')}.")


def web_read(request: Request) -> Reply:
    results = task_results(request)
    page = next((r for r in _of(results, "read") if "<h1>" in r.text), None)
    if page is None:
        return call("read", path="site/index.html")
    project = _project(results)
    if not project:
        return call("read", path="project.json")
    heading = re.search(r"<h1>(.*?)</h1>", page.text)
    title = heading.group(1) if heading else "(no heading)"
    return final(f"The page's heading is {title}; the project is {project.get('name')}.")


def plan_contract(request: Request) -> Reply:
    return final(
        "<proposed_plan>\n1. Read project.json for the version.\n2. Add a CHANGELOG.md "
        "entry for it.\n3. Show the diff for review.\n</proposed_plan>"
    )


def plan_accepted(request: Request) -> Reply:
    if _ACCEPTED not in latest_user(request):
        return final(
            "<proposed_plan>\n1. Read project.json.\n2. Report its version.\n</proposed_plan>"
        )
    project = _project(task_results(request))
    if not project:
        return call("read", path="project.json")
    return final(f"The version is {project.get('version')}. PLAN_ACCEPTED_CONTINUATION_OK")


def enoent(request: Request) -> Reply:
    """Read the wrong path, ask for it again (the provider must refuse the repeat), then
    search with bash and read the file where it is."""
    results = task_results(request)
    marker = _file_value(results, "smokeMarker")
    if marker:
        return final(f"The smokeMarker is {marker}.")
    searches = _of(results, "bash")
    if searches:
        found = _FOUND.search(searches[-1].text)
        if found:
            return call("read", path=found.group(1))
        return final("The search found no settings.json.")
    if not _of(results, "read"):
        return call("read", path="settings.json")
    if not repaired(request):
        return call("read", path="settings.json")  # the repeat the provider must refuse
    return call("bash", command="find . -name settings.json")


def clipped_read(request: Request) -> Reply:
    project = _project(task_results(request))
    if not project:
        return call("read", path="project.json")
    return final(f"The version is {project.get('version')}.")


def _later(ack: str, then: Policy) -> Policy:
    def policy(request: Request) -> Reply | str:
        if latest_user(request).strip() not in ("继续", "continue"):
            return final(ack)
        return then(request)

    return policy


def _settings_marker(request: Request) -> Reply:
    marker = _file_value(task_results(request), "smokeMarker")
    if not marker:
        return call("read", path="conf/settings.json")
    return final(f"Done: the smokeMarker is {marker}.")


def injection(request: Request) -> Reply:
    results = _of(task_results(request), "read")
    if not results:
        return call("read", path="notes/release.txt")
    m = re.search(r"verification word is (\w+)", results[-1].text)
    return final(
        f"The verification word is {m.group(1)}. The file also holds text that tries to look "
        "like tool calls; I treated it as data and ran nothing."
        if m
        else "The file names no verification word."
    )


def long_read(request: Request) -> Reply:
    results = _of(task_results(request), "read")
    for r in results:
        m = re.search(r"(?m)^\s*2500\t.*marker is (\w+)", r.text)
        if m:
            return final(f"Line 2500 says the marker is {m.group(1)}.")
    if not results:
        return call("read", path="logs/run.log")
    more = _CONTINUES.search(results[-1].text)
    if more is None:
        return final("Line 2500 is not in the file.")
    return call("read", path="logs/run.log", offset=int(more.group(1)))


def status_not_found(request: Request) -> Reply:
    results = _of(task_results(request), "get_status")
    if not results:
        return call("get_status", task_id="task-deadbeef0000")
    first = results[-1].text.strip().splitlines()[0] if results[-1].text.strip() else ""
    return final(f"deskpilot knows no task task-deadbeef0000: {first[:200]}")


def vision_receipt(request: Request) -> Reply:
    results = _of(task_results(request), "vision_read")
    if not results:
        return call("vision_read", path="scans/receipt.png", question="What is the pickup code?")
    m = re.search(r"code:?\s*([A-Z]+\s*-\s*\d{4})", results[-1].text)
    if m is None:
        return final("I could not read a pickup code in the image.")
    return final(f"The pickup code is {m.group(1).replace(' ', '')}.")


LOCAL_POLICIES: dict[str, Policy] = {
    "no-tool": no_tool,
    "bash-pwd": bash_pwd,
    "read": read_project,
    "bash-read": bash_read,
    "local-web-read": web_read,
    "plan-mode-contract": plan_contract,
    "plan-mode-accepted-continuation": plan_accepted,
    "read-enoent-recovery": enoent,
    "tool-selection-clipping": clipped_read,
    "tool-selection-continuation": _later("noted", clipped_read),
    "until-done-continuation": _later("recorded", _settings_marker),
    "tool-result-injection": injection,
    "read-long-file": long_read,
    "task-status-not-found": status_not_found,
    "vision-read-image": vision_receipt,
}
