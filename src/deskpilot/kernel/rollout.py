"""Automatic, off-only rollback of flags from what this process observes.

Thresholds and the 2,048-sample window: docs/architecture.md, "Numbers that matter"
(rollback thresholds) and docs/kernel.md, "Flags and rollback". Each metric names the flag it
really concerns; a metric whose flag is not declared in this build is still counted (status
shows it) but has nothing to turn off. Process-local: nothing is persisted, a restart starts
clean with the flags the environment says.

Producers (each one is real code, not a test hook):

=============================  ===========================================================
metric                         producer
=============================  ===========================================================
host_crash                     broker: every backend call it makes (observe, execute); a
                               crash is an error that means the host process died or was
                               killed (native_host_unavailable, action_timeout,
                               protocol_error, host_handshake_failed)
artifact_failure               broker: every backend call; a failure is
                               native_host_untrusted (the installed host failed its
                               verification at spawn)
action_error                   broker: every action that reached the backend; an error is
                               any failure other than a stale frame/tree (those are
                               expected, the caller re-observes)
takeover_stop_latency          broker: every pause/takeover/stop/kill, from the request to
                               the session being quiet (in-flight action ended or aborted)
batch_break                    runtime (delegated operator): every action batch; a break
                               is a batch stopped by an error or a stale element before
                               its last action (a dialog that opened is not a break)
persistent_capture_budget      none in this build: the Linux host captures per request
                               (XGetImage, ~2 ms), there is no persistent capture stream
=============================  ===========================================================
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from deskpilot.kernel.flags import FLAGS, Flags

WINDOW = 2_048


class Metric(enum.StrEnum):
    HOST_CRASH = "host_crash"
    ARTIFACT_FAILURE = "artifact_failure"
    ACTION_ERROR = "action_error"
    TAKEOVER_STOP_LATENCY = "takeover_stop_latency"
    PERSISTENT_CAPTURE_BUDGET = "persistent_capture_budget"
    BATCH_BREAK = "batch_break"


@dataclass(frozen=True, slots=True)
class Threshold:
    metric: Metric
    limit: float  # a rate, or milliseconds for the p99 metric
    min_samples: int
    flag: str | None  # the flag it concerns; None = no flag in this build
    why: str


THRESHOLDS: dict[Metric, Threshold] = {
    t.metric: t
    for t in (
        Threshold(
            Metric.HOST_CRASH,
            0.005,
            200,
            None,
            "a crashing host is restarted by the host client's supervisor, which has no "
            "flag in this build; the rate is reported, nothing is rolled back",
        ),
        Threshold(
            Metric.ARTIFACT_FAILURE,
            0.001,
            1_000,
            None,
            "an untrusted host is never spawned; there is no optional feature to drop",
        ),
        Threshold(
            Metric.ACTION_ERROR,
            0.01,
            500,
            "escapeInterrupt",
            "the only optional behaviour that turns a dispatched action into an error is the "
            "Escape interrupt (handoff_required); a misreading keyboard or remote viewer "
            "would show here first",
        ),
        Threshold(
            Metric.TAKEOVER_STOP_LATENCY,
            500.0,
            100,
            "gracefulCancel",
            "the grace before aborting an in-flight action is what lengthens a stop",
        ),
        Threshold(
            Metric.BATCH_BREAK,
            0.25,
            100,
            "actionBatch",
            "batches that keep breaking (stale elements, errors mid-batch) cost more model "
            "calls than they save; one action per decision is the safe fallback",
        ),
        Threshold(
            Metric.PERSISTENT_CAPTURE_BUDGET,
            0.01,
            200,
            None,
            "no persistent capture stream on Linux/X11 in this build",
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Rollback:
    flag: str
    metric: Metric
    value: float
    limit: float
    samples: int
    at: float


class RolloutController:
    def __init__(self, flags: Flags, window: int = WINDOW) -> None:
        self.flags = flags
        self._samples: dict[Metric, deque[float]] = {m: deque(maxlen=window) for m in Metric}
        self._sums: dict[Metric, float] = dict.fromkeys(Metric, 0.0)  # O(1) rates per sample
        self._lock = threading.Lock()
        self.rollbacks: list[Rollback] = []
        for t in THRESHOLDS.values():
            assert t.flag is None or t.flag in FLAGS, t

    # -- producers
    def record_host_call(self, crashed: bool) -> None:
        self._add(Metric.HOST_CRASH, 1.0 if crashed else 0.0)

    def record_artifact_check(self, failed: bool) -> None:
        self._add(Metric.ARTIFACT_FAILURE, 1.0 if failed else 0.0)

    def record_action(self, error: bool) -> None:
        self._add(Metric.ACTION_ERROR, 1.0 if error else 0.0)

    def record_takeover_stop(self, ms: float) -> None:
        self._add(Metric.TAKEOVER_STOP_LATENCY, ms)

    def record_batch(self, broke: bool) -> None:
        self._add(Metric.BATCH_BREAK, 1.0 if broke else 0.0)

    def record_capture_budget(self, missed: bool) -> None:
        self._add(Metric.PERSISTENT_CAPTURE_BUDGET, 1.0 if missed else 0.0)

    # -- evaluation
    def value(self, metric: Metric) -> tuple[float, int]:
        with self._lock:
            data = list(self._samples[metric])
        if not data:
            return 0.0, 0
        if metric != Metric.TAKEOVER_STOP_LATENCY:
            return self._sums[metric] / len(data), len(data)
        if metric == Metric.TAKEOVER_STOP_LATENCY:
            ordered = sorted(data)
            idx = min(len(ordered) - 1, max(0, math.ceil(0.99 * len(ordered)) - 1))  # nearest rank
            return ordered[idx], len(data)
        return sum(data) / len(data), len(data)

    def _add(self, metric: Metric, sample: float) -> None:
        with self._lock:
            window = self._samples[metric]
            if len(window) == window.maxlen:
                self._sums[metric] -= window[0]
            window.append(sample)
            self._sums[metric] += sample
            n = len(window)
        if n >= THRESHOLDS[metric].min_samples:
            self._check(metric)

    def _check(self, metric: Metric) -> None:
        t = THRESHOLDS[metric]
        value, n = self.value(metric)
        if n < t.min_samples or value <= t.limit or t.flag is None:
            return
        if self.flags.disable(t.flag, f"{metric.value} {value:.4g} > {t.limit:g} (n={n})"):
            self.rollbacks.append(Rollback(t.flag, metric, value, t.limit, n, time.time()))

    def status(self) -> dict[str, object]:
        metrics: dict[str, object] = {}
        for m, t in THRESHOLDS.items():
            value, n = self.value(m)
            metrics[m.value] = {
                "value": round(value, 6),
                "samples": n,
                "limit": t.limit,
                "minSamples": t.min_samples,
                "flag": t.flag,
            }
        return {
            "metrics": metrics,
            "flags": self.flags.snapshot(),
            "rollbacks": [
                {"flag": r.flag, "metric": r.metric.value, "value": r.value, "at": r.at}
                for r in self.rollbacks
            ],
        }
