"""``deskpilot smoke --plan``: which model-callable tools the live cases cover.

Every tool the agent can offer a model (the runtime's desktop tools and the agent's own) is
listed with the cases that require it to run (``live``), the cases that only offer it
(``offered``), or none (``static``: proved only by the offline tests). A tool added later with
no case shows up as ``static`` here, which is the point: the plan is read before a release.
"""

from __future__ import annotations

from typing import Any

from deskpilot.agent.bash import BashTool
from deskpilot.agent.files import ReadTool
from deskpilot.runtime.agent_desktop import HIDDEN
from deskpilot.runtime.tools import TOOLS
from deskpilot.smoke.cases import ALL_CASES, profiles_of
from deskpilot.smoke.schema import PLAN_SCHEMA

#: the agent's own tools; vision_read is offered when OCR or a vision model is ready
LOCAL_TOOLS = (ReadTool().spec.name, BashTool().spec.name, "vision_read")


def model_tools() -> list[str]:
    return [*(n for n in TOOLS if n not in HIDDEN), *LOCAL_TOOLS]


def plan() -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for tool in model_tools():
        live = [c.name for c in ALL_CASES if tool in c.expect.must_run]
        offered = [
            c.name
            for c in ALL_CASES
            if tool not in c.expect.must_run
            and (c.tools is None or tool in c.tools)
            and (c.expect.only is None or tool in c.expect.only)
        ]
        rows.append(
            {
                "tool": tool,
                "coverage": "live" if live else ("offered" if offered else "static"),
                "cases": live,
                "offeredBy": offered if not live else [],
                "profiles": sorted({p for c in live for p in profiles_of(c)}),
            }
        )
    return {
        "schema": PLAN_SCHEMA,
        "tools": rows,
        "live": sum(1 for r in rows if r["coverage"] == "live"),
        "staticOnly": [r["tool"] for r in rows if r["coverage"] != "live"],
    }
