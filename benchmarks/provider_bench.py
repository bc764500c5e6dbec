"""Provider hot paths: parse + validate one envelope, select 16 of 200 tools, judge a final.

Run: .venv/bin/python benchmarks/provider_bench.py
Budgets (issue 6): parse + validate a typical envelope <= 50 us median; select 16 of 200 tools
<= 1 ms median. Each figure is printed with a baseline measured in the same run.
"""

from __future__ import annotations

import json
import re
import statistics
import timeit
from collections.abc import Callable

from deskpilot.provider import ToolSpec, evaluate
from deskpilot.provider.tools import select_tools

ENVELOPE = (
    '{"kind":"tool_call","name":"read","arguments":{"path":"src/deskpilot/provider/parser.py",'
    '"offset":120,"limit":200}}'
)
READ = ToolSpec(
    "read",
    "Read a text file from the workspace.",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "pattern": "^[^\\x00]+$"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)
WORDS = [
    "calendar",
    "event",
    "email",
    "message",
    "window",
    "file",
    "folder",
    "image",
    "screenshot",
    "network",
    "browser",
    "tab",
    "search",
    "index",
    "database",
    "table",
    "query",
    "report",
    "chart",
    "invoice",
    "payment",
    "user",
    "account",
    "setting",
    "printer",
    "device",
    "audio",
    "video",
    "clipboard",
    "archive",
    "backup",
    "sync",
    "upload",
    "download",
]


def make_tools(n: int) -> list[ToolSpec]:
    tools = [READ]
    for i in range(1, n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]
        tools.append(
            ToolSpec(
                f"{a}_{b}_{i}",
                f"Manage the {a} and {b} objects: list, create, update or delete a {a} by id.",
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "path": {"type": "string"}},
                },
            )
        )
    return tools


TOOLS = make_tools(200)
BY_NAME = {t.name: t for t in TOOLS}
SELECTED = frozenset(t.name for t in TOOLS[:16])
PROMPT = [
    "Open the invoice report for March, then read src/reports/march.csv and compare the "
    "payment totals with the database table; don't use email_archive_5 for this."
]
FINAL = json.dumps(
    {
        "kind": "final",
        "text": "Summary of the migration:\n"
        + "\n".join(f"- step {i}: moved table_{i} to the new schema" for i in range(40)),
    }
)


def median_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e6


def naive_select(prompt: str, max_tools: int) -> list[str]:
    """Baseline: one word-boundary regex per tool name, then a sort."""
    scored = []
    for index, tool in enumerate(TOOLS):
        hit = re.search(rf"(?<![\w.]){re.escape(tool.name)}(?![\w.])", prompt, re.IGNORECASE)
        scored.append((-(100 if hit else 0), index, tool.name))
    scored.sort()
    return [name for _, _, name in scored[:max_tools]]


def main() -> None:
    verdict = evaluate(ENVELOPE, selected=SELECTED, tools=BY_NAME)
    assert verdict.kind == "tool_call", verdict
    selection = select_tools(TOOLS, PROMPT, max_tools=16)
    assert len(selection.selected) == 16 and "read" in selection.names

    parse_us = median_us(lambda: evaluate(ENVELOPE, selected=SELECTED, tools=BY_NAME), 200, 50)
    loads_us = median_us(lambda: json.loads(ENVELOPE), 2000, 50)
    select_us = median_us(lambda: select_tools(TOOLS, PROMPT, max_tools=16), 20, 50)
    naive_us = median_us(lambda: naive_select(PROMPT[0], 16), 20, 50)
    final_us = median_us(lambda: evaluate(FINAL, selected=SELECTED, tools=BY_NAME), 200, 50)

    rows = [
        ("parse+validate typical envelope", parse_us, "json.loads only", loads_us, 50.0),
        ("select 16 of 200 tools", select_us, "naive regex per tool", naive_us, 1000.0),
        ("judge a 2 KB final (firewall)", final_us, "json.loads only", loads_us, None),
    ]
    print(f"{'case':34} {'median':>11} {'baseline':>22} {'ratio':>7}  budget")
    ok = True
    for name, value, base_name, base, budget in rows:
        verdict_text = "-" if budget is None else ("ok" if value <= budget else "OVER")
        ok &= verdict_text != "OVER"
        print(
            f"{name:34} {value:9.1f}us {base_name:>16} {base:5.1f}us {value / base:6.1f}x"
            f"  {'' if budget is None else f'<= {budget:.0f}us '}{verdict_text}"
        )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
