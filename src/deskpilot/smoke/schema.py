"""Names both halves of the smoke suite agree on: schemas, the run stamp, artifact files.

The runner writes and the summary reader reads exactly these; a schema name carries its version
so a reader can refuse (or adapt to) an artifact it does not know.

A run's artifacts share its stamp, ``YYYYMMDD-HHMMSS-PID`` (the pid keeps two runs started in
the same second apart; a stamp without it, ``YYYYMMDD-HHMMSS``, is still read)::

    <stamp>-provider-health.json      the preflight (or why it was skipped)
    <stamp>-<case>.events.jsonl       the agent's event stream (``deskpilot agent --json``)
    <stamp>-<case>.debug.jsonl        the provider's debug log for that case
    <stamp>-<case>.stderr.txt         the agent process's stderr (bounded)
    <stamp>-<case>.lifecycle.json     exit status, elapsed, watchdog, agent end → process exit
    <stamp>-<case>.case.json          the case's verdict: checks, telemetry, fingerprint
    <stamp>-summary.json              the run's summary (SUMMARY_SCHEMA)
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

SUMMARY_SCHEMA = "deskpilot.smoke-summary.v1"
CASE_SCHEMA = "deskpilot.smoke-case.v1"
LIFECYCLE_SCHEMA = "deskpilot.smoke-lifecycle.v1"
HEALTH_SCHEMA = "deskpilot.smoke-provider-health.v1"
HISTORY_SCHEMA = "deskpilot.smoke-history.v1"
COMPARE_SCHEMA = "deskpilot.smoke-compare.v1"
DRIFT_SCHEMA = "deskpilot.smoke-drift.v1"
GATE_SCHEMA = "deskpilot.smoke-trend-gate.v1"
RETENTION_SCHEMA = "deskpilot.smoke-retention-report.v1"
PLAN_SCHEMA = "deskpilot.smoke-plan.v1"
RUN_SCHEMA = "deskpilot.smoke-run.v1"

#: how a run is classified (``runKind``)
RUN_KINDS = ("full-suite", "targeted", "preflight-failed", "empty")
#: a model request slower than this is counted as slow (observed, not gated by default)
SLOW_REQUEST_MS = 60_000

STAMP = re.compile(r"^(\d{8}-\d{6}(?:-\d+)?)")
_CASE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")

#: artifact suffixes a run may leave; ``retention`` inventories exactly these
SUFFIX_HEALTH = "-provider-health.json"
SUFFIX_SUMMARY = "-summary.json"
CASE_SUFFIXES = (".events.jsonl", ".debug.jsonl", ".stderr.txt", ".lifecycle.json", ".case.json")


def new_stamp(now: float | None = None, pid: int | None = None) -> str:
    t = time.localtime(time.time() if now is None else now)
    return f"{time.strftime('%Y%m%d-%H%M%S', t)}-{os.getpid() if pid is None else pid}"


def smoke_dir(data_dir: Path) -> Path:
    """Where runs live: ``<data dir>/smoke``."""
    return data_dir / "smoke"


def valid_case_name(name: str) -> bool:
    return bool(_CASE_NAME.match(name))


def summary_path(root: Path, stamp: str) -> Path:
    return root / f"{stamp}{SUFFIX_SUMMARY}"


def health_path(root: Path, stamp: str) -> Path:
    return root / f"{stamp}{SUFFIX_HEALTH}"


def case_path(root: Path, stamp: str, case: str, suffix: str) -> Path:
    if suffix not in CASE_SUFFIXES:
        raise ValueError(f"unknown case artifact suffix {suffix!r}")
    return root / f"{stamp}-{case}{suffix}"


def stamp_of(filename: str) -> str | None:
    """The run stamp a file name starts with, or None (not a smoke artifact)."""
    match = STAMP.match(filename)
    return match.group(1) if match else None


# --- the summary reader (``deskpilot smoke summary``); added for the reader half of issue #15 ---

#: the full-suite profile's cases, in run order; ``cases.full_suite_names()`` agrees with this
FULL_SUITE_CASES = (
    "no-tool",
    "bash-pwd",
    "read",
    "bash-read",
    "local-web-read",
    "plan-mode-contract",
    "plan-mode-accepted-continuation",
    "read-enoent-recovery",
    "tool-selection-clipping",
    "tool-selection-continuation",
    "until-done-continuation",
    "tool-result-injection",
)
#: one run read directly (``--latest`` / ``--run-id``): the summary plus its gate
RUN_VIEW_SCHEMA = "deskpilot.smoke-run-view.v1"
#: the compact state doctor shows
STATE_SCHEMA = "deskpilot.smoke-state.v1"
#: the summary reader's self-test result
SUMMARY_SELFTEST_SCHEMA = "deskpilot.smoke-summary-selftest.v1"
#: an intermediate a debug summariser may leave next to a run; it is never a run summary
SUFFIX_DEBUG_SUMMARY = "-debug-summary.json"
#: a run's scratch workspace directory, ``<stamp>-workspace/``
SUFFIX_WORKSPACE = "-workspace"
#: a stamp and nothing else (a ``--run-id``)
RUN_ID = re.compile(r"^\d{8}-\d{6}(?:-\d+)?$")

#: the trend gate's profiles (``gates.PROFILES`` defines them and checks it agrees with this);
#: here so the command's help can name them without importing the reader at start-up
GATE_PROFILES = ("full-suite-strict", "full-suite-runtime-strict", "full-suite-ranking-strict")
