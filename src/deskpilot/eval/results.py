"""``results.json``: what an eval run found, written after every task (so ``--resume`` can
pick up where an interrupted run stopped) and read back by ``--resume``.

Schema ``deskpilot.eval.results/1`` (docs/eval.md): the suite (name, path, SHA-256), the agent,
the run's settings and machine, then one record per task run — outcome, verification rows,
steps, model calls, time, the desktop's figures and the task's data dir (its encrypted
trajectory: the ledger and timeline in the store, evidence frames in the vault).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS_SCHEMA = "deskpilot.eval.results/1"
RESULTS_FILE = "results.json"
PASSED = "passed"
FAILED = "failed"
ERROR = "error"
#: outcomes ``--resume`` keeps; an ``error`` (the task could not be run) runs again
FINISHED = frozenset({PASSED, FAILED})


def run_key(task_id: str, repeat: int) -> str:
    return f"{task_id}#{repeat}"


@dataclass
class TaskRecord:
    task_id: str
    repeat: int
    outcome: str
    time_s: float
    verification: list[dict[str, Any]] = field(default_factory=list)
    steps: int | None = None
    model_calls: int | None = None
    agent: dict[str, Any] = field(default_factory=dict)
    setup: dict[str, Any] = field(default_factory=dict)
    desktop: dict[str, Any] = field(default_factory=dict)
    trajectory: str | None = None
    error: str | None = None
    #: why this is a second attempt: the first one's Ray actor was lost mid-run (its process
    #: died), e.g. ``actor lost: …`` — ray_engine.py runs such a task once more elsewhere
    retried_after: str | None = None

    @property
    def key(self) -> str:
        return run_key(self.task_id, self.repeat)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "repeat": self.repeat,
            "outcome": self.outcome,
            "timeS": round(self.time_s, 3),
            "verification": self.verification,
            "steps": self.steps,
            "modelCalls": self.model_calls,
            "agent": self.agent,
            "setup": self.setup,
            "desktop": self.desktop,
            "trajectory": self.trajectory,
            "error": self.error,
            "retriedAfter": self.retried_after,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TaskRecord:
        return cls(
            task_id=str(d["id"]),
            repeat=int(d.get("repeat", 0)),
            outcome=str(d["outcome"]),
            time_s=float(d.get("timeS", 0.0)),
            verification=list(d.get("verification") or []),
            steps=d.get("steps"),
            model_calls=d.get("modelCalls"),
            agent=dict(d.get("agent") or {}),
            setup=dict(d.get("setup") or {}),
            desktop=dict(d.get("desktop") or {}),
            trajectory=d.get("trajectory"),
            error=d.get("error"),
            retried_after=d.get("retriedAfter"),
        )


def totals(records: Iterable[TaskRecord]) -> dict[str, Any]:
    rows = list(records)
    return {
        "tasks": len(rows),
        PASSED: sum(r.outcome == PASSED for r in rows),
        FAILED: sum(r.outcome == FAILED for r in rows),
        ERROR: sum(r.outcome == ERROR for r in rows),
        "sumTaskS": round(sum(r.time_s for r in rows), 3),
    }


def write_results(path: Path, header: dict[str, Any], records: Iterable[TaskRecord]) -> None:
    """The whole file, replaced atomically (a reader never sees half of it)."""
    rows = sorted(records, key=lambda r: (r.task_id, r.repeat))
    body = {
        "schema": RESULTS_SCHEMA,
        **header,
        "totals": totals(rows),
        "tasks": [r.to_json() for r in rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(body, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(tmp, path)


def load_finished(path: Path, suite_sha256: str, agent: str | None = None) -> dict[str, TaskRecord]:
    """The finished task runs of an earlier run of the same suite file (``--resume``); a
    results file of another suite (or of a changed one), or of another agent (``agent``: the
    label this run records — a mixed file would score two agents as one), is refused."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the earlier results: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != RESULTS_SCHEMA:
        raise ValueError(f"{path}: not a {RESULTS_SCHEMA} file")
    if (data.get("suite") or {}).get("sha256") != suite_sha256:
        raise ValueError(f"{path}: written for another suite file (or it changed since)")
    if agent is not None and data.get("agent") != agent:
        raise ValueError(
            f"{path}: written by the agent {data.get('agent')!r}, not {agent!r}: resume with "
            "the same --agent, or give another --out"
        )
    out: dict[str, TaskRecord] = {}
    for row in data.get("tasks") or []:
        rec = TaskRecord.from_json(row)
        if rec.outcome in FINISHED:
            out[rec.key] = rec
    return out
