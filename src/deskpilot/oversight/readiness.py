"""The readiness page's logic: ``deskpilot doctor``'s report, run on demand, shown in sections.

The report is the doctor's own: :func:`deskpilot.hostclient.diagnosis.diagnose` (host trust,
capabilities, permissions, backends, supervisor, vault key, and in the full mode the
latencies of observe / action / post-action observe on a ``zenity`` dialog it opens and
closes) plus :func:`deskpilot.kernel.sharing.desktop_sharing` (the kill switch a server
started now would get, and the display's lease), with the doctor's rule that a kill switch
that cannot be armed makes the desktop not ready. Only the smoke-run summary of
``deskpilot doctor`` is left out: it belongs to the smoke layer, which sits beside the
dashboard, not below it.

A diagnosis starts a host process and takes a few seconds, so it never runs while a page
renders: :class:`ReadinessChecks` runs it in the background when the person asks ("Run
checks"), keeps the last report with its time, and refuses to start a second one while one
runs. What is cheap and changes on its own — the halt and its history, the desktop lease,
the takeover hold — is read at every render instead (:func:`live_sections`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.hostclient.diagnosis import diagnose
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.lease import DisplayLease
from deskpilot.kernel.sharing import desktop_sharing
from deskpilot.kernel.takeover import Takeover
from deskpilot.oversight.banner import clock, halt_cause
from deskpilot.oversight.error_table import describe, link
from deskpilot.oversight.i18n import TABLE, translate
from deskpilot.store.db import Database
from deskpilot.store.leases import LeaseRepository, desktop_lane

log = logging.getLogger(__name__)

Mode = Literal["full", "verify_host"]
MODES: tuple[Mode, ...] = ("full", "verify_host")
#: a diagnosis that takes longer than this is stopped and reported as such
CHECK_TIMEOUT_S = 90.0
#: how many past halts the page lists
HALT_HISTORY = 5
Tone = Literal["", "ok", "bad", "warn"]


@dataclass(frozen=True)
class Report:
    """One finished run: the doctor's JSON (``data``), or why there is none (``error_key``
    and its fields, rendered in the reader's language)."""

    mode: Mode
    started_at: float
    finished_at: float
    data: dict[str, Any] | None = None
    error_key: str | None = None
    error_fields: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_ms(self) -> int:
        return round((self.finished_at - self.started_at) * 1000)


async def run_checks(mode: Mode, *, timeout_s: float = CHECK_TIMEOUT_S) -> Report:
    """What ``deskpilot doctor [--verify-host] --json`` prints, minus the smoke summary."""
    started = time.time()
    try:
        data = await asyncio.wait_for(_diagnose_and_share(mode), timeout=timeout_s)
    except TimeoutError:
        fields: dict[str, Any] = {"seconds": int(timeout_s)}
        return Report(
            mode, started, time.time(), error_key="readiness.timed_out", error_fields=fields
        )
    except Exception as exc:  # the checks broke: say how, in words, on the page
        log.warning("readiness checks failed: %s", type(exc).__name__)
        fields = {"error": f"{type(exc).__name__}: {exc}"}
        return Report(mode, started, time.time(), error_key="readiness.failed", error_fields=fields)
    if (data.get("killSwitch") or {}).get("blocksReady"):
        data["ready"] = False  # the doctor's rule: no key to stop an agent, not ready
    return Report(mode, started, time.time(), data=data)


async def _diagnose_and_share(mode: Mode) -> dict[str, Any]:
    """The doctor's checks and the desktop's sharing state, under one deadline: the kill
    switch probe talks to the X server, which can be slow to answer too."""
    diagnosis = await diagnose(verify_only=mode == "verify_host")
    data = diagnosis.to_dict()
    data.update(await asyncio.to_thread(desktop_sharing))
    return data


class ReadinessChecks:
    """The dashboard's one diagnosis at a time, and the last report."""

    def __init__(
        self, run: Callable[[Mode], Any] | None = None, *, timeout_s: float = CHECK_TIMEOUT_S
    ) -> None:
        self._run = run or (lambda mode: run_checks(mode, timeout_s=timeout_s))
        self.last: Report | None = None
        self.running_mode: Mode | None = None
        self.running_since: float | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, mode: Mode) -> bool:
        """Start a run; False when one is already running (that one's report will come)."""
        if mode not in MODES:
            raise ValueError(f"unknown readiness mode {mode!r}; expected one of {MODES}")
        if self.running:
            return False
        self.running_mode = mode
        self.running_since = time.time()
        self._task = asyncio.create_task(self._one(mode), name=f"readiness-{mode}")
        return True

    async def _one(self, mode: Mode) -> None:
        try:
            self.last = await self._run(mode)
        finally:
            self.running_mode = None
            self.running_since = None

    async def wait(self) -> Report | None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)
        return self.last

    def status(self) -> dict[str, Any]:
        last = self.last
        return {
            "running": self.running,
            "runningSince": self.running_since,
            "generatedAt": None if last is None else last.finished_at,
        }

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


# ---------------------------------------------------------------------- what the page shows
@dataclass(frozen=True)
class Row:
    name: str
    label: str
    value: str
    tone: Tone = ""


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    rows: list[Row]
    live: bool = False


@dataclass(frozen=True)
class Verdict:
    """The report's headline: ready or not, the first reason, and any error in words."""

    ready: bool
    headline: str
    diagnostic: str | None
    #: the errors page's sentence and next step for the diagnostic code, and its row there
    diagnostic_text: str
    diagnostic_next: str
    diagnostic_link: str
    error: str | None
    kill_switch_blocks: bool
    when: str
    mode: str
    took_ms: int


def _t(locale: str) -> Callable[..., str]:
    def t(key: str, **values: object) -> str:
        return translate(key, locale, **values)

    return t


def _yes(value: object, locale: str) -> tuple[str, Tone]:
    ok = bool(value)
    return translate("readiness.yes" if ok else "readiness.no", locale), "ok" if ok else "bad"


def _ms(value: object, locale: str) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return translate("readiness.not_measured", locale)
    return translate("readiness.ms", locale, ms=f"{value:.1f}")


def permission_text(state: str, locale: str) -> str:
    key = f"readiness.perm.{state}"
    return translate(key, locale) if key in TABLE else state


def error_text(report: Report, locale: str) -> str | None:
    """Why the checks could not run, or the host's own error, in words."""
    if report.error_key is not None:
        return translate(report.error_key, locale, **report.error_fields)
    error = (report.data or {}).get("error")
    if isinstance(error, dict) and error.get("message"):
        return f"{error['message']} ({error.get('code')})"
    return None


def verdict(report: Report, locale: str) -> Verdict:
    data = report.data or {}
    ready = bool(data.get("ready"))
    blocks = bool((data.get("killSwitch") or {}).get("blocksReady"))
    code = data.get("diagnosticCode")
    explained = describe(str(code), locale) if code else None
    return Verdict(
        ready=ready,
        headline=translate("readiness.ready" if ready else "readiness.not_ready", locale),
        diagnostic=code,
        diagnostic_text="" if explained is None else explained.sentence,
        diagnostic_next="" if explained is None else explained.next_step,
        diagnostic_link="" if not code else link(str(code)),
        error=error_text(report, locale),
        kill_switch_blocks=blocks,
        when=clock(report.finished_at),
        mode=translate(f"readiness.mode.{report.mode}", locale),
        took_ms=report.duration_ms,
    )


def _host_rows(data: dict[str, Any], locale: str) -> list[Row]:
    t = _t(locale)
    host = data.get("host") or {}
    trusted, tone = _yes(data.get("trusted"), locale)
    rows = [Row("trusted", t("readiness.row.trusted"), trusted, tone)]
    if "available" in host:
        text, tone = _yes(host.get("available"), locale)
        rows.append(Row("available", t("readiness.row.available"), text, tone))
    for name, key, label in (
        ("host_version", "hostVersion", "readiness.row.host_version"),
        ("protocol_version", "protocolVersion", "readiness.row.protocol_version"),
        ("platform", "platform", "readiness.row.platform"),
        ("session_type", "sessionType", "readiness.row.session_type"),
    ):
        if host.get(key) is not None:
            rows.append(Row(name, t(label), str(host[key])))
    if host.get("startMs") is not None:
        rows.append(Row("start_ms", t("readiness.row.start_ms"), _ms(host["startMs"], locale)))
    if host.get("unavailableReason"):
        rows.append(
            Row("unavailable", t("readiness.row.unavailable"), host["unavailableReason"], "bad")
        )
    artifact = host.get("artifact") or {}
    if artifact:
        value = t(
            "readiness.artifact_value",
            mode=artifact.get("mode"),
            files=artifact.get("filesChecked", 0),
        )
        rows.append(Row("artifact", t("readiness.row.artifact"), value))
    return rows


def _three(data: dict[str, Any] | None, locale: str, *, permissions: bool) -> list[Row]:
    t = _t(locale)
    rows = []
    for name in ("screen", "accessibility", "input"):
        if data is None or name not in data:
            continue
        state = str(data[name])
        if permissions:
            tone: Tone = "ok" if state == "granted" else "bad"
            rows.append(Row(name, t(f"readiness.row.{name}"), permission_text(state, locale), tone))
        else:
            shown = t("readiness.backend.none") if state == "none" else state
            rows.append(
                Row(name, t(f"readiness.row.{name}"), shown, "bad" if state == "none" else "")
            )
    return rows


def _latency_rows(data: dict[str, Any], locale: str) -> list[Row]:
    t = _t(locale)
    latencies = data.get("latenciesMs") or {}
    rows = [
        Row("observe", t("readiness.row.observe"), _ms(latencies.get("observe"), locale)),
        Row("action", t("readiness.row.action"), _ms(latencies.get("action"), locale)),
        Row(
            "post_action",
            t("readiness.row.post_action"),
            _ms(latencies.get("postActionObserve"), locale),
        ),
    ]
    sample = data.get("sample") or {}
    if sample.get("skipped"):
        rows.append(
            Row(
                "sample",
                t("readiness.row.sample"),
                t("readiness.sample_skipped", why=sample["skipped"]),
                "warn",
            )
        )
    elif sample.get("error"):
        code = (sample["error"] or {}).get("code")
        rows.append(
            Row("sample", t("readiness.row.sample"), t("readiness.sample_error", code=code), "bad")
        )
    elif sample.get("app"):
        value = t(
            "readiness.sample_on",
            app=sample.get("app"),
            source=sample.get("source"),
            elements=sample.get("elements"),
        )
        rows.append(Row("sample", t("readiness.row.sample"), value))
    return rows


def _supervisor_rows(data: dict[str, Any], locale: str) -> list[Row]:
    t = _t(locale)
    sup = data.get("supervisor") or {}
    if not sup:
        return []
    spent = ", ".join(sup.get("budgetExhaustedSessions") or []) or t("common.none")
    return [
        Row("state", t("readiness.row.state"), str(sup.get("state"))),
        Row(
            "restarts",
            t("readiness.row.restarts"),
            t("readiness.restarts_value", n=sup.get("restartBudgetPerSession"), sessions=spent),
        ),
    ]


def kill_switch_text(ks: dict[str, Any], locale: str) -> tuple[str, Tone]:
    state = str(ks.get("state") or "unknown")
    if state in ("armed", "free"):
        return translate(f"readiness.ks.{state}", locale), "ok"
    if state == "watching":
        return translate("readiness.ks.watching", locale, pid=ks.get("holderPid")), "ok"
    if state == "off":
        return translate("readiness.ks.off", locale), "warn"
    if state == "unavailable":
        return translate("readiness.ks.unavailable", locale, cause=ks.get("cause")), "bad"
    return translate("readiness.ks.unknown", locale, cause=ks.get("cause")), "warn"


def _kill_switch_rows(data: dict[str, Any] | None, locale: str) -> list[Row]:
    t = _t(locale)
    ks = (data or {}).get("killSwitch")
    if not ks:
        return [Row("state", t("readiness.row.state"), t("readiness.ks.not_probed"), "warn")]
    text, tone = kill_switch_text(ks, locale)
    rows = [Row("state", t("readiness.row.state"), text, tone)]
    if ks.get("chord"):
        rows.append(Row("chord", t("readiness.row.chord"), str(ks["chord"])))
    return rows


def report_sections(report: Report, locale: str) -> list[Section]:
    """The diagnosis, section by section (empty when the checks could not run)."""
    data = report.data
    if data is None:
        return []
    t = _t(locale)
    sections = [
        Section("host", t("readiness.section.host"), _host_rows(data, locale)),
        Section(
            "permissions",
            t("readiness.section.permissions"),
            _three(data.get("permissions"), locale, permissions=True),
        ),
        Section(
            "backends",
            t("readiness.section.backends"),
            _three(data.get("backends"), locale, permissions=False),
        ),
    ]
    if report.mode == "full":
        sections.append(
            Section("latencies", t("readiness.section.latencies"), _latency_rows(data, locale))
        )
    supervisor = _supervisor_rows(data, locale)
    if supervisor:
        sections.append(Section("supervisor", t("readiness.section.supervisor"), supervisor))
    vault = data.get("vault") or {}
    if vault:
        value = f"{vault.get('keyStorage')}: {vault.get('detail')}"
        sections.append(
            Section(
                "vault", t("readiness.section.vault"), [Row("key", t("readiness.row.key"), value)]
            )
        )
    sections.append(
        Section("kill_switch", t("readiness.section.kill_switch"), _kill_switch_rows(data, locale))
    )
    return [s for s in sections if s.rows]


# ---------------------------------------------------------------------- read at every render
def _halt_rows(db: Database, locale: str) -> list[Row]:
    t = _t(locale)
    halt = Halt(db)
    active = halt.active()
    rows = [
        Row(
            "now",
            t("readiness.row.halt_now"),
            t("readiness.halt.none")
            if active is None
            else t(
                "readiness.halt.row_active",
                when=clock(active.engaged_at),
                cause=halt_cause(active.reason, locale),
            ),
            "" if active is None else "bad",
        )
    ]
    past = [h for h in halt.repo.history(HALT_HISTORY) if h.lifted_at is not None]
    if not past and active is None:
        rows.append(Row("history", "", t("readiness.halt.no_history")))
    for h in past:
        lifted = t("readiness.halt.lifted_by", when=clock(h.lifted_at or 0), by=h.lifted_by)
        value = t(
            "readiness.halt.row",
            when=clock(h.engaged_at),
            cause=halt_cause(h.reason, locale),
            lifted=lifted,
        )
        rows.append(Row(f"halt-{h.id}", "", value))
    return rows


def _lease_rows(db: Database, locale: str) -> list[Row]:
    t = _t(locale)
    status = DisplayLease().status()
    state = status.get("state")
    tone: Tone
    if state == "none":
        value, tone = t("readiness.lease.none"), ""
    elif state == "free":
        value, tone = t("readiness.lease.free"), "ok"
    elif state in ("held", "held_by_other"):
        holder = status.get("holder") or {}
        since_ms = holder.get("sinceEpochMs")
        since = "?" if since_ms is None else clock(since_ms / 1000)
        acting = t("readiness.lease.acting") if holder.get("acting") else ""
        value = t("readiness.lease.held", pid=holder.get("pid"), since=since, acting=acting)
        tone = "warn"
    else:
        value, tone = t("readiness.lease.unknown", cause=status.get("cause")), "warn"
    rows = []
    if status.get("display"):
        rows.append(Row("display", t("readiness.row.display"), str(status["display"])))
    rows.append(Row("holder", t("readiness.row.holder"), value, tone))
    lane = LeaseRepository(db).get(desktop_lane(status.get("display")))
    if lane is None:
        rows.append(Row("lane", t("readiness.row.lane"), t("readiness.lane.free")))
    else:
        rows.append(
            Row(
                "lane",
                t("readiness.row.lane"),
                t(
                    "readiness.lane.held",
                    session=lane.session_id,
                    agent=lane.agent_session_id,
                    since=clock(lane.acquired_at),
                ),
            )
        )
    return rows


def _takeover_rows(db: Database, locale: str) -> list[Row]:
    t = _t(locale)
    hold = Takeover(db).active()
    if hold is None:
        return [Row("hold", t("readiness.row.hold"), t("readiness.hold.none"), "ok")]
    value = t(
        "readiness.hold.held",
        by=hold.held_by,
        since=clock(hold.started_at),
        session=hold.session_id,
    )
    return [Row("hold", t("readiness.row.hold"), value, "warn")]


def live_sections(db: Database, locale: str) -> list[Section]:
    """The halt (now and the last few), the desktop lease and the takeover hold: cheap reads
    of the database and the lease file, so they are always current."""
    t = _t(locale)
    return [
        Section("halts", t("readiness.section.halts"), _halt_rows(db, locale), live=True),
        Section("lease", t("readiness.section.lease"), _lease_rows(db, locale), live=True),
        Section("takeover", t("readiness.section.takeover"), _takeover_rows(db, locale), live=True),
    ]
