"""``deskpilot smoke``: preflight, then each case as its own agent process, then the summary.

The run is generic over any OpenAI-compatible endpoint: the configured one (``deskpilot
provider configure``), handed to each case's agent process through its environment, with the
smoke's own bounds (request timeout, output tokens). Each case gets a fresh working directory
with its fixture files and a private data dir, so a case cannot see another's state and the
person's own store is not touched; desktop cases run on a private desktop (never the person's).

A provider error in a case stops the run (the rest are recorded as skipped) unless told to go
on: when the endpoint is down, twelve timeouts say nothing one does not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deskpilot.provider import ProviderConfig, ProviderError, load_config
from deskpilot.provider.config.profiles import ENV_PREFIX, KNOBS
from deskpilot.provider.contract.manifest import load_contract
from deskpilot.smoke import history
from deskpilot.smoke.case_model import Case, CaseEnv, CaseUnavailable, Failure, Observation
from deskpilot.smoke.cases import full_suite_names
from deskpilot.smoke.checks import judge, user_tasks
from deskpilot.smoke.desktop_cases import (
    PERSON_DESKTOP_KEYS,
    DesktopUnavailable,
    case_process_env,
    private_desktop,
)
from deskpilot.smoke.gates import gate_run
from deskpilot.smoke.lifecycle import Lifecycle, run_agent_process, write_json
from deskpilot.smoke.preflight import run_preflight, skipped
from deskpilot.smoke.schema import case_path, health_path, new_stamp, summary_path
from deskpilot.smoke.summary import build_summary, case_record, skipped_record

#: overrides the agent command (an executable path); unset: this Python's ``-m deskpilot``
AGENT_ENV = "DESKPILOT_SMOKE_AGENT"
DEFAULT_CASE_TIMEOUT_S = 240.0
DEFAULT_REQUEST_TIMEOUT_MS = 180_000
DEFAULT_MAX_OUTPUT_TOKENS = 1024
#: provider failures that say the endpoint, not the case, is the problem
STOP_CATEGORIES = frozenset(
    {"configuration", "authentication", "rate_limit", "timeout", "network", "upstream"}
)
DESKTOP_BINARIES = ("Xvfb", "dbus-daemon", "gnome-calculator", "zenity")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PREFLIGHT = 3
EXIT_INTERRUPTED = 130


STALLED = "request_stalled"
#: what a case that never ended also "fails" only because its end never came (what it did
#: wrong before — a tool it may not run, a leak — is still reported)
UNENDED = frozenset(
    {
        "task_not_ended",
        "empty_assistant_end",
        "wrong_status",
        "tool_not_executed",
        "read_path_missing",
        "final_missing_text",
        "plan_missing",
        "continuation_not_ranked",
        "clipping_not_reported",
    }
)


class CaseInterrupted(Exception):
    """The person interrupted the run during a case; its record (with what it did) goes along."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__("interrupted")
        self.record = record


class MissingHelper(RuntimeError):
    """Something the run needs is not there (exit 2 before anything runs)."""


@dataclass
class Options:
    cases: Sequence[Case]
    profile: str | None = None
    out_dir: Path | None = None
    case_timeout_s: float = DEFAULT_CASE_TIMEOUT_S
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    stop_on_provider_error: bool = True
    preflight: bool = True
    preflight_attempts: int = 2
    preflight_timeout_ms: int = 30_000
    preflight_retry_delay_ms: int = 1_000
    self_test: bool = False
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    #: told about each case as it ends (the CLI's progress lines)
    progress: Callable[[dict[str, Any]], None] | None = None


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    summary: dict[str, Any]
    summary_path: Path


def agent_command(env: Mapping[str, str]) -> list[str]:
    """The agent command, checked: a missing or non-executable override fails fast."""
    override = env.get(AGENT_ENV, "").strip()
    if not override:
        return [sys.executable, "-m", "deskpilot"]
    path = Path(override)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise MissingHelper(f"{AGENT_ENV}={override} is not an executable file")
    return [str(path)]


def check_helpers(options: Options) -> list[str]:
    argv = agent_command(options.env)
    if any(c.desktop for c in options.cases):
        missing = [b for b in DESKTOP_BINARIES if shutil.which(b) is None]
        if missing:
            raise MissingHelper(
                f"the desktop cases need {', '.join(missing)} (scripts/run installs them)"
            )
    return argv


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _provider_env(config: ProviderConfig, options: Options) -> dict[str, str]:
    """The configured endpoint as the agent process's environment: every resolved limit (the
    person's profile, file and variables — the case's private data dir holds no config file),
    then the smoke's own bounds on top."""
    env = {ENV_PREFIX + k.env: str(getattr(config.limits, k.field)) for k in KNOBS}
    env.update(
        {
            ENV_PREFIX + "BASE_URL": config.base_url,
            ENV_PREFIX + "MODEL": config.model,
            ENV_PREFIX + "PROFILE": config.profile,
            ENV_PREFIX + "PER_ATTEMPT_TIMEOUT_MS": str(options.request_timeout_ms),
            ENV_PREFIX + "TOTAL_DEADLINE_MS": str(options.request_timeout_ms),
            ENV_PREFIX + "MAX_OUTPUT_TOKENS": str(options.max_output_tokens),
        }
    )
    if config.api_key:
        env[ENV_PREFIX + "API_KEY"] = config.api_key
    return env


def _base_env(env: Mapping[str, str]) -> dict[str, str]:
    """The person's environment without their desktop and without provider settings (the
    run's own are added): a local case never reaches the person's screen."""
    return {
        k: v
        for k, v in env.items()
        if k not in PERSON_DESKTOP_KEYS and not k.startswith(ENV_PREFIX)
    }


def _case_argv(agent: list[str], case: Case, workspace: Path) -> tuple[list[str], list[str] | None]:
    argv = [*agent, "agent", "--json", "--cwd", str(workspace)]
    if case.tools is not None:
        argv += ["--tools", ",".join(case.tools) or "none"]
    if case.max_tools is not None:
        argv += ["--max-tools", str(case.max_tools)]
    if len(case.turns) == 1 and not case.turns[0].startswith("/"):
        return [*argv, case.turns[0]], None
    return argv, list(case.turns)


def _write_files(workspace: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")


def provider_stop(obs: Observation, life: Lifecycle | None = None) -> str | None:
    """The provider error code that ended the case when it says the endpoint is the problem;
    ``request_stalled`` when the watchdog ended a case whose last act was a model request
    still unanswered (an endpoint that hangs would cost every case its whole watchdog)."""
    hung = life is not None and life.timed_out and life.agent_end_s is None
    if hung and obs.debug and obs.debug[-1].get("event") == "request":
        return STALLED
    contract = load_contract()
    for error in obs.of("error"):
        code = str(error.get("code"))
        try:
            category = contract.spec(code).category
        except (KeyError, ProviderError):
            continue
        if category in STOP_CATEGORIES:
            return code
    return None


class _Run:
    """One run's state: where its artifacts go, the scratch it removes, the case loop."""

    def __init__(self, options: Options, root: Path, stamp: str, agent: list[str]) -> None:
        self.options = options
        self.root = root
        self.stamp = stamp
        self.agent = agent
        self.scratch = Path(tempfile.mkdtemp(prefix=f"deskpilot-smoke-{stamp}-"))

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def run_case(self, case: Case, env: Mapping[str, str]) -> tuple[dict[str, Any], str | None]:
        workspace = self.scratch / "work" / case.name
        workspace.mkdir(parents=True)
        _write_files(workspace, case.files)
        data = self.scratch / "data" / case.name
        data.mkdir(parents=True, mode=0o700)
        debug = case_path(self.root, self.stamp, case.name, ".debug.jsonl")
        events = case_path(self.root, self.stamp, case.name, ".events.jsonl")
        case_env = {
            **env,
            "DESKPILOT_DATA_DIR": str(data),
            "DESKPILOT_PROVIDER_DEBUG": "1",
            "DESKPILOT_PROVIDER_DEBUG_PATH": str(debug),
        }
        where = CaseEnv(workspace, case_env, self.root, self.stamp)
        argv, lines = _case_argv(self.agent, case, workspace)
        setup = case.setup(where) if case.setup is not None else contextlib.nullcontext(None)
        with setup as state:
            life = run_agent_process(
                argv,
                env=case_env,
                cwd=workspace,
                stdin_lines=lines,
                events_path=events,
                stderr_path=case_path(self.root, self.stamp, case.name, ".stderr.txt"),
                tasks=user_tasks(case),
                timeout_s=case.timeout_s or self.options.case_timeout_s,
            )
            obs = Observation.load(events, debug)
            failures = judge(case, obs, workspace)
            if case.verify is not None and not life.interrupted:
                failures += case.verify(obs, state)
        stop = provider_stop(obs, life)
        if life.interrupted or (life.timed_out and life.agent_end_s is None):
            # the agent never ended: no answer is the consequence, not a finding of its own
            failures = [f for f in failures if f.code not in UNENDED]
        if life.interrupted:
            failures.append(Failure("interrupted", "the run was interrupted while this case ran"))
        elif stop == STALLED:
            failures.append(Failure(STALLED, "the model request was never answered"))
        if not life.ok and not life.interrupted:
            failures.append(Failure("process_lifecycle", life.problem()))
        write_json(case_path(self.root, self.stamp, case.name, ".lifecycle.json"), life.to_json())
        record = case_record(case, obs, life, failures, stalled=stop == STALLED)
        write_json(case_path(self.root, self.stamp, case.name, ".case.json"), record)
        if life.interrupted:
            raise CaseInterrupted(record)
        return record, stop


@contextlib.contextmanager
def _desktop_env(cases: Sequence[Case], base: Mapping[str, str]) -> Iterator[dict[str, str]]:
    if not any(c.desktop for c in cases):
        yield dict(base)
        return
    with private_desktop() as desktop:
        yield case_process_env(desktop, base)


def run(options: Options) -> Outcome:
    """Preflight, cases, summary. Raises ``MissingHelper`` before anything is written."""
    agent = check_helpers(options)
    root = options.out_dir
    if root is None:
        from deskpilot.smoke.schema import smoke_dir
        from deskpilot.store.paths import data_dir

        root = smoke_dir(data_dir())
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = new_stamp()
    started, t0 = _now(), time.monotonic()
    selected = [c.name for c in options.cases]
    settings = {
        "caseTimeoutS": options.case_timeout_s,
        "requestTimeoutMs": options.request_timeout_ms,
        "maxOutputTokens": options.max_output_tokens,
        "stopOnProviderError": options.stop_on_provider_error,
        "preflight": options.preflight,
    }
    provider: dict[str, Any] = {}
    config: ProviderConfig | None = None
    interrupted = False
    try:
        config = load_config(options.env, require_key=True)
        provider = {"endpoint": config.endpoint, "model": config.model, "profile": config.profile}
        health = (
            run_preflight(
                config,
                attempts=options.preflight_attempts,
                timeout_ms=options.preflight_timeout_ms,
                retry_delay_ms=options.preflight_retry_delay_ms,
            )
            if options.preflight
            else skipped("preflight turned off")
        )
    except KeyboardInterrupt:  # during the preflight: nothing ran, the summary says so
        interrupted = True
        health = {**skipped("interrupted during the preflight"), "ok": False}
    except ProviderError as err:  # no usable configuration: the preflight's failure too
        health = {
            **skipped("no usable provider configuration"),
            "ok": False,
            "skipped": False,
            "error": {"code": err.code, "category": err.category, "message": err.message},
        }
    write_json(health_path(root, stamp), health)
    records: list[dict[str, Any]] = []
    stop_reason: str | None = None
    if not health.get("ok"):
        stop_reason = "interrupted" if interrupted else "preflight_failed"
        records = [skipped_record(n, stop_reason) for n in selected]
    elif options.cases:
        assert config is not None
        records, stop_reason = _cases(options, root, stamp, agent, config)
    summary = build_summary(
        run_id=stamp,
        started_at=started,
        ended_at=_now(),
        elapsed_s=time.monotonic() - t0,
        provider=provider,
        self_test=options.self_test,
        profile=options.profile,
        selected=selected,
        full_suite=full_suite_names(),
        settings=settings,
        health=health,
        stop_reason=stop_reason,
        records=records,
    )
    path = summary_path(root, stamp)
    write_json(path, summary)
    if health.get("ok"):  # the run's own gate: exactly the selected cases, all clean
        summary["summaryGate"] = own_gate(path, stamp, selected)
        write_json(path, summary)
    if stop_reason == "preflight_failed":
        code = EXIT_PREFLIGHT
    elif stop_reason == "interrupted":
        code = EXIT_INTERRUPTED
    else:
        gate_ok = summary.get("summaryGate", {}).get("ok", True)
        code = EXIT_OK if summary["ok"] and gate_ok else EXIT_FAILED
    return Outcome(code, summary, path)


def own_gate(path: Path, stamp: str, selected: Sequence[str]) -> dict[str, Any]:
    """The summary reader's gate on the summary just written, expecting exactly the selected
    cases (the same count and the same names): what ``deskpilot smoke summary --run-id`` says
    about this run, recorded in it."""
    result = gate_run(
        history.load(stamp, path),
        overrides={"expect_cases": len(selected), "expect_case_names": tuple(selected)},
    )
    return {"ok": result.ok, "failures": [f.to_json() for f in result.failures]}


def _cases(
    options: Options, root: Path, stamp: str, agent: list[str], config: ProviderConfig
) -> tuple[list[dict[str, Any]], str | None]:
    records: list[dict[str, Any]] = []
    stop_reason: str | None = None
    why = ""  # what stopped the run, for the skipped cases' reason
    run_state = _Run(options, root, stamp, agent)
    base = {**_base_env(options.env), **_provider_env(config, options)}
    try:
        with _desktop_env(options.cases, base) as env:
            for case in options.cases:
                if stop_reason is not None:
                    record = skipped_record(case.name, why or stop_reason)
                    stop_code = None
                else:
                    try:
                        record, stop_code = run_case_safely(run_state, case, env)
                    except CaseInterrupted as exc:  # the case's agent is already ended
                        stop_reason = "interrupted"
                        record, stop_code = exc.record, None
                    except KeyboardInterrupt:  # during a setup or a verify
                        stop_reason = "interrupted"
                        record, stop_code = skipped_record(case.name, stop_reason), None
                records.append(record)
                if options.progress is not None:
                    options.progress(record)
                if stop_code is not None and options.stop_on_provider_error:
                    stop_reason = "provider_error"
                    why = f"provider_error: {stop_code} in {case.name}"
    except DesktopUnavailable as exc:
        done = {r["name"] for r in records}
        records += [
            skipped_record(c.name, f"desktop_unavailable: {exc}")
            for c in options.cases
            if c.name not in done
        ]
        stop_reason = "desktop_unavailable"
    finally:
        run_state.close()
    return records, stop_reason


def run_case_safely(
    run_state: _Run, case: Case, env: Mapping[str, str]
) -> tuple[dict[str, Any], str | None]:
    """A case that cannot run here is skipped with the reason; one whose setup breaks is a
    failed case with the reason; neither crashes the run."""
    try:
        return run_state.run_case(case, env)
    except CaseUnavailable as exc:
        return skipped_record(case.name, f"unavailable: {exc}"), None
    except CaseInterrupted:
        raise
    except Exception as exc:
        record = {
            **skipped_record(case.name, "case_error"),
            "skipped": False,
            "failures": [Failure("case_error", f"{type(exc).__name__}: {exc}").to_json()],
        }
        return record, None
