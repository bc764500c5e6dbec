"""``deskpilot eval SUITE``: run a task suite, each task on its own fresh private desktop.

Translates the options into ``deskpilot.eval`` (docs/eval.md) and shows the run: a live line
of running / passed / failed with an ETA, then a table of the task runs and the path of
``results.json``.

Exit codes: 0 every task run passed; 1 a task failed or could not run; 2 a usage error (a bad
option, a suite file that is not valid, more desktops than the machine holds); 4 the
``operator`` agent has no usable decision model; 130 interrupted (Ctrl-C: the running agents
are ended and their desktops torn down; ``--resume`` continues).
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from deskpilot.eval.agents import AgentSpec
from deskpilot.eval.capacity import CapacityError, Machine
from deskpilot.eval.results import RESULTS_FILE, TaskRecord
from deskpilot.eval.suite import Suite, SuiteError, SuiteTask, load_suite

if TYPE_CHECKING:  # the engine pulls in the runtime: loaded only when eval runs
    from deskpilot.eval.engine import Progress
    from deskpilot.eval.ray_start import RayStart

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_MODEL = 4
EXIT_INTERRUPTED = 130


def _progress_text(p: Progress, slots: int) -> Text:
    eta = p.eta_s(slots)
    shown = "…" if eta is None else f"{eta:.0f} s"
    t = Text()
    t.append(f"{p.done + p.skipped}/{p.total} ", style="bold")
    t.append(f"running {len(p.running)} ", style="cyan")
    t.append(f"passed {p.passed} ", style="green")
    t.append(f"failed {p.failed} ", style="red")
    if p.errors:
        t.append(f"errors {p.errors} ", style="yellow")
    if p.skipped:
        t.append(f"resumed {p.skipped} ", style="dim")
    t.append(f"elapsed {p.task_elapsed():.0f} s ETA {shown}", style="dim")
    if p.running:
        t.append("\n  now: " + ", ".join(p.running[:6]), style="dim")
    return t


def _table(records: list[TaskRecord]) -> Table:
    table = Table(title="deskpilot eval")
    for col in ("task", "outcome", "verification", "steps", "model calls", "time"):
        table.add_column(col)
    style = {"passed": "green", "failed": "red", "error": "yellow"}
    for r in records:
        passed = sum(v.get("passed") is True for v in r.verification)
        label = r.task_id if r.repeat == 0 else f"{r.task_id}#{r.repeat}"
        table.add_row(
            label,
            Text(
                r.outcome + (" (retried)" if r.retried_after else ""),
                style=style.get(r.outcome, ""),
            ),
            f"{passed}/{len(r.verification)}" if r.verification else (r.error or "")[:60],
            "" if r.steps is None else str(r.steps),
            "" if r.model_calls is None else str(r.model_calls),
            f"{r.time_s:.1f} s",
        )
    return table


def _host_command(text: str | None, console: Console) -> tuple[str, ...] | None:
    """``--host-command`` checked like serve's (an ssh argv, no shell)."""
    if text is None:
        return None
    from deskpilot.hostclient.remote import parse_host_command
    from deskpilot.protocol.errors import DeskpilotError

    try:
        return parse_host_command(text)
    except DeskpilotError as exc:
        console.print(f"[red]error (usage):[/red] {exc.message}", markup=True, highlight=False)
        raise typer.Exit(EXIT_USAGE) from None


def remote_refusal(host_command: str | None, engine: str) -> str | None:
    """Why ``--host-command`` cannot run this eval (None = it can). Each task's desktop, its
    setup and its check run on the remote machine (docs/eval.md, "Desktops on another
    machine"); what cannot follow them there is refused."""
    if host_command is None:
        return None
    if engine == "ray":
        return (
            "--host-command runs each task's desktop on the remote machine, driven over ssh "
            "from this one by the thread engine: it cannot be used with --engine ray / --ray "
            "(Ray places desktops on its own nodes)"
        )
    return None


def choose_engine(engine: str | None, ray_address: str | None, host_command: str | None) -> str:
    """The engine a run uses: an embedded Ray by default (``--ray ADDRESS``: that cluster),
    the thread engine when asked for or with ``--host-command`` (its desktops are on the
    remote machine, not on Ray's nodes)."""
    if engine is not None and engine not in ("threads", "ray"):
        raise ValueError(f"--engine is threads or ray, not {engine!r}")
    if ray_address is not None:
        if engine == "threads":
            raise ValueError("--ray ADDRESS joins a Ray cluster: not with --engine threads")
        return "ray"
    if engine is not None:
        return engine
    return "threads" if host_command is not None else "ray"


def eval_suite(
    suite_path: Path = typer.Argument(..., help="The suite file (JSON or YAML, docs/eval.md)."),
    desktops: int = typer.Option(1, "--desktops", help="Private desktops side by side."),
    agent: str = typer.Option(
        "operator",
        "--agent",
        help='operator, mcp:"COMMAND" (an MCP agent command), or none (the baseline: '
        "every task should fail).",
    ),
    provider: str | None = typer.Option(
        None, "--provider", help="The provider profile the operator decides with."
    ),
    tasks: str | None = typer.Option(None, "--tasks", help="Only these task ids: a,b,c."),
    repeat: int = typer.Option(1, "--repeat", min=1, max=100, help="Run each task K times."),
    out: Path | None = typer.Option(
        None, "--out", help="Where results.json and the task dirs go (default: a new dir)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Skip the runs --out already finished."),
    as_json: bool = typer.Option(False, "--json", help="No live view; print results.json's path."),
    host_command: str | None = typer.Option(
        None,
        "--host-command",
        help='each task\'s desktop on another machine, over ssh: "ssh user@box deskpilot-host" '
        "(no shell; docs/eval.md)",
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="ray (the default: a Ray actor per desktop, on an embedded local Ray unless "
        "--ray) or threads (a thread per desktop in this process: less to start on a small "
        "machine; the default with --host-command).",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray", help="Join this Ray cluster (ADDRESS, e.g. 127.0.0.1:6379): --engine ray."
    ),
    send_provider_key: bool = typer.Option(
        False,
        "--send-provider-key",
        help="With --ray ADDRESS and --agent operator: send the decision model's key to the "
        "cluster's nodes (refused without it).",
    ),
) -> None:
    """Run a task suite on private desktops and score each task by its success criteria.

    Exit codes: 0 all passed, 1 a task failed or could not run, 2 usage error (bad option,
    invalid suite, more desktops than this machine holds), 4 no decision model (operator),
    130 interrupted (the finished runs are kept: --resume continues).
    """
    console = Console(stderr=True)
    try:
        suite = load_suite(suite_path)
        if tasks is not None and not any(t.strip() for t in tasks.split(",")):
            raise ValueError("--tasks names no task (leave it out to run them all)")
        chosen = suite.select([t.strip() for t in (tasks or "").split(",") if t.strip()] or None)
        spec = AgentSpec.parse(agent)
        engine = choose_engine(engine, ray_address, host_command)
        if ray_address is not None and spec.kind == "operator" and not send_provider_key:
            # the key is in the actors' constructor argument: Ray ships it to every node
            raise ValueError(
                "--ray ADDRESS with --agent operator sends the decision model's API key to "
                "the cluster's machines: add --send-provider-key to allow it"
            )
        refused = remote_refusal(host_command, engine)
        if refused is not None:
            raise ValueError(refused)
        parsed_host = _host_command(host_command, console)
        if ray_address is None and parsed_host is None:
            # a cluster's desktops run on its nodes, --host-command's on the remote machine
            Machine.here().check(desktops)
    except (SuiteError, ValueError) as exc:  # CapacityError is a ValueError
        kind = "capacity" if isinstance(exc, CapacityError) else "usage"
        console.print(f"[red]error ({kind}):[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    if resume and out is None:
        console.print("[red]error (usage):[/red] --resume needs the --out of the earlier run")
        raise typer.Exit(EXIT_USAGE)
    if not resume and out is not None and (out / RESULTS_FILE).exists():
        console.print(
            f"[red]error (usage):[/red] {out} holds the results of an earlier run: --resume "
            "continues it; give another --out for a new one (nothing was overwritten)"
        )
        raise typer.Exit(EXIT_USAGE)
    provider_vars: dict[str, str] = {}
    if spec.kind == "operator":
        from deskpilot.eval.provider_env import provider_env, resolve_provider
        from deskpilot.provider import ProviderError

        try:
            provider_vars = provider_env(resolve_provider(os.environ, provider))
        except ProviderError as err:
            console.print(f"[red]error:[/red] no decision model for the operator: {err.message}")
            raise typer.Exit(EXIT_NO_MODEL) from None
    ray_start: RayStart | None = None
    if engine == "ray":
        # Ray starts (2-5 s) while this process imports the engine and plans the runs
        # (eval/ray_start.py)
        from deskpilot.eval.ray_start import RayStart

        ray_start = RayStart(ray_address, desktops)
    try:
        _run_and_show(
            console,
            suite,
            suite_path,
            chosen,
            spec,
            engine,
            ray_address,
            ray_start,
            provider_vars,
            desktops=desktops,
            provider=provider,
            repeat=repeat,
            out=out,
            resume=resume,
            as_json=as_json,
            host_command=parsed_host,
        )
    finally:
        if ray_start is not None:
            ray_start.close()  # after the results were shown


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends a run the way Ctrl-C does: the agents stopped, the desktops torn down,
    the runs recorded (``--resume`` continues) — not a process killed with its desktops
    left behind."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _run_and_show(
    console: Console,
    suite: Suite,
    suite_path: Path,
    chosen: list[SuiteTask],
    spec: AgentSpec,
    engine: str,
    ray_address: str | None,
    ray_start: RayStart | None,
    provider_vars: dict[str, str],
    *,
    desktops: int,
    provider: str | None,
    repeat: int,
    out: Path | None,
    resume: bool,
    as_json: bool,
    host_command: tuple[str, ...] | None,
) -> None:
    from deskpilot.eval.engine import EvalOptions, EvalOutcome, run_eval
    from deskpilot.eval.worker import WorkerConfig

    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        out = Path.cwd() / f"eval-{suite.name}-{stamp}"
    worker = WorkerConfig(
        agent=spec,
        out_dir=out.resolve(),
        base_env=dict(os.environ),
        provider_env=provider_vars,
        host_command=host_command,
    )
    slots = desktops
    live: Live | None = None

    def shown(p: Progress, record: TaskRecord | None) -> None:
        if live is not None:
            live.update(_progress_text(p, slots))
        if record is not None and not as_json:
            mark = {"passed": "green", "failed": "red"}.get(record.outcome, "yellow")
            console.print(
                f"[{mark}]{record.outcome}[/{mark}] {record.task_id} ({record.time_s:.1f} s)"
                + (f" — {record.error}" if record.error else "")
                + (f" — retried after: {record.retried_after}" if record.retried_after else ""),
                highlight=False,
            )

    options = EvalOptions(
        suite=suite,
        suite_path=suite_path.resolve(),
        tasks=chosen,
        worker=worker,
        desktops=desktops,
        repeat=repeat,
        resume=resume,
        provider=provider,
        on_progress=shown,
    )

    def run() -> EvalOutcome:
        if engine == "ray":
            from deskpilot.eval.ray_engine import run_eval_ray

            return run_eval_ray(options, ray_address, ray_start)
        return run_eval(options)

    _interrupt_on_sigterm()
    try:
        if as_json:
            outcome = run()
        else:
            with Live(Text("starting…"), console=console, refresh_per_second=4) as live_view:
                live = live_view
                outcome = run()
            live = None
    except ValueError as exc:  # --resume with results of another suite; Ray cannot start
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        typer.echo(str(outcome.results_path))
    else:
        Console().print(_table(outcome.records))
        console.print(f"results: {outcome.results_path} (wall {outcome.wall_s:.1f} s)")
    sys.stdout.flush()
    outcome.close()  # Ray's shutdown, once the results are out
    if outcome.interrupted:
        console.print(f"interrupted: continue with --resume --out {out}", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    raise typer.Exit(EXIT_OK if outcome.ok else EXIT_FAILED)
