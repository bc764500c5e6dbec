"""``deskpilot smoke --self-test``: the runner proved against a scripted model, offline.

The reference model (fake_model/reference.py, a real HTTP server on loopback) answers every
case the way a good model would, so the chosen cases must all pass; then known-bad conditions
must each be caught: a wrong answer, a missing agent command (exit 2 before anything runs), a
preflight that fails (no case runs, the summary says why), a 429 that is not retried at once,
a provider error that stops the run, an unknown case name. Each check runs a real agent
process per case, exactly as a live run does; only the model is scripted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from deskpilot.smoke.case_model import Case
from deskpilot.smoke.cases import SelectionError, full_suite_names, select
from deskpilot.smoke.fake_model.reference import Router
from deskpilot.smoke.fake_model.replies import final
from deskpilot.smoke.fake_model.server import Policy, ScriptedModel
from deskpilot.smoke.runner import (
    AGENT_ENV,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PREFLIGHT,
    MissingHelper,
    Options,
    Outcome,
    run,
)
from deskpilot.smoke.schema import CASE_SUFFIXES, SUMMARY_SCHEMA
from deskpilot.smoke.summary_selftest import Check

FAKE_KEY = "smoke-self-test-key-not-a-secret"


class _Bench:
    """A scripted model, a scratch artifact dir and the run options for one check."""

    def __init__(self, env: Mapping[str, str], root: Path) -> None:
        self.env = env
        self.root = root
        self.count = 0

    def run(
        self,
        cases: Sequence[Case],
        *,
        overrides: Mapping[str, Policy] | None = None,
        prepare: Callable[[ScriptedModel], None] | None = None,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> tuple[Outcome, ScriptedModel, Path]:
        self.count += 1
        out = self.root / f"check-{self.count}"
        with ScriptedModel(Router(cases, overrides), model_id="reference") as model:
            if prepare is not None:
                prepare(model)
            run_env = {
                **self.env,
                **(env or {}),
                "DESKPILOT_PROVIDER_BASE_URL": model.base_url,
                "DESKPILOT_PROVIDER_MODEL": "reference",
                "DESKPILOT_PROVIDER_API_KEY": FAKE_KEY,
                "DESKPILOT_DATA_DIR": str(self.root / "data"),
            }
            outcome = run(Options(cases=cases, out_dir=out, env=run_env, self_test=True, **options))
        return outcome, model, out


def _failed_codes(outcome: Outcome, name: str) -> list[str]:
    for record in outcome.summary["caseResults"]:
        if record["name"] == name:
            return [f["code"] for f in record.get("failures") or []]
    return []


def reference_run(bench: _Bench, cases: Sequence[Case]) -> Check:
    outcome, model, out = bench.run(cases)
    s = outcome.summary
    bad = [r["name"] for r in s["caseResults"] if not r.get("ok")]
    missing = [
        f"{c.name}{suffix}"
        for c in cases
        for suffix in CASE_SUFFIXES
        if not (out / f"{s['runId']}-{c.name}{suffix}").exists()
    ]
    expected_kind = (
        "full-suite" if {c.name for c in cases} == set(full_suite_names()) else "targeted"
    )
    ok = (
        outcome.exit_code == EXIT_OK
        and not bad
        and not missing
        and s["schema"] == SUMMARY_SCHEMA
        and s["runKind"] == expected_kind
        and s["totals"]["requests"] > 0
    )
    detail = (
        f"{len(cases)} cases passed in {s['elapsedS']} s, {model.calls} model requests"
        if ok
        else f"exit {outcome.exit_code}; failed {bad}; missing artifacts {missing}; "
        f"runKind {s['runKind']}"
    )
    return Check("reference model passes every case", ok, detail)


def case_filter(bench: _Bench) -> Check:
    outcome, _, out = bench.run(select([], ["read"]))
    s = outcome.summary
    others = [p.name for p in out.iterdir() if "-read." not in p.name and p.suffix != ".json"]
    ok = s["cases"] == ["read"] and s["runKind"] == "targeted" and not others
    return Check(
        "--case runs only the named case", ok, f"cases {s['cases']}, runKind {s['runKind']}"
    )


def wrong_answer(bench: _Bench) -> Check:
    liar: Policy = lambda request: final("The project is deskpilot, version 9.9.9.")  # noqa: E731
    outcome, _, _ = bench.run(select([], ["read"]), overrides={"read": liar})
    codes = _failed_codes(outcome, "read")
    ok = outcome.exit_code == EXIT_FAILED and "tool_not_executed" in codes
    return Check("an answer without reading fails the case", ok, f"failures {codes}")


def missing_agent(bench: _Bench) -> Check:
    try:
        bench.run(select([], ["read"]), env={AGENT_ENV: "/nonexistent/deskpilot"})
    except MissingHelper as exc:
        written = list((bench.root / f"check-{bench.count}").glob("*"))
        return Check("a missing agent command fails fast (exit 2)", not written, str(exc))
    return Check("a missing agent command fails fast (exit 2)", False, "the run went ahead")


def preflight_failure(bench: _Bench) -> Check:
    outcome, model, out = bench.run(
        select([], ["read"]), prepare=lambda m: m.fail_next(401, count=10)
    )
    s = outcome.summary
    error = (s["providerHealth"].get("error") or {}).get("code")
    case_files = [p for p in out.iterdir() if p.name.endswith(CASE_SUFFIXES)]
    ok = (
        outcome.exit_code == EXIT_PREFLIGHT
        and s["runKind"] == "preflight-failed"
        and error == "http_401"
        and not case_files
        and model.calls == 1
    )
    return Check("a failed preflight runs no case and says why", ok, f"{s['runKind']}, {error}")


def rate_limit(bench: _Bench) -> Check:
    outcome, model, _ = bench.run(
        select([], ["read"]), prepare=lambda m: m.fail_next(429, count=10)
    )
    health = outcome.summary["providerHealth"]
    reason = health.get("retrySuppressedReason")
    ok = model.calls == 1 and reason == "rate_limit_immediate_retry_disabled"
    return Check("a 429 is not retried at once", ok, f"{model.calls} request(s), {reason}")


def provider_stop(bench: _Bench) -> Check:
    outcome, _, _ = bench.run(
        select([], ["read", "bash-pwd"]),
        prepare=lambda m: m.fail_next(401, count=50),
        preflight=False,
    )
    s = outcome.summary
    skipped = [r["name"] for r in s["caseResults"] if r.get("skipped")]
    ok = s["stopReason"] == "provider_error" and skipped == ["bash-pwd"]
    return Check(
        "a provider error stops the rest of the run",
        ok,
        f"stopReason {s['stopReason']}, skipped {skipped}, "
        f"errors {s['totals']['providerErrorCodes']}",
    )


def unknown_case() -> Check:
    try:
        select([], ["no-such-case"])
    except SelectionError as exc:
        return Check("an unknown case is refused (exit 2)", True, str(exc).split(";")[0])
    return Check("an unknown case is refused (exit 2)", False, "accepted")


def self_test(cases: Sequence[Case], env: Mapping[str, str]) -> list[Check]:
    """Every check; the reference run over ``cases``, the known-bad ones on local cases."""
    with tempfile.TemporaryDirectory(prefix="deskpilot-smoke-self-test-") as tmp:
        bench = _Bench(env, Path(tmp))
        checks = [reference_run(bench, cases)]
        checks += [
            case_filter(bench),
            wrong_answer(bench),
            missing_agent(bench),
            preflight_failure(bench),
            rate_limit(bench),
            provider_stop(bench),
            unknown_case(),
        ]
    return checks
