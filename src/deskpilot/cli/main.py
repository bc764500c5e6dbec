"""The ``deskpilot`` command. Sub-commands live in their own modules and only translate."""

from __future__ import annotations

import typer

from deskpilot.cli import (
    agent,
    control,
    desktop,
    doctor,
    observe,
    provider,
    run,
    serve,
    sessions,
    smoke,
    ui,
    vault,
    verification,
)
from deskpilot.cli import eval as eval_cmd

app = typer.Typer(
    name="deskpilot",
    help="Governed computer use for Linux desktops.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(desktop.app, name="desktop")
app.command("doctor")(doctor.doctor)
app.command("serve")(serve.serve)
app.command("observe")(observe.observe)
app.add_typer(provider.app, name="provider")
app.add_typer(vault.app, name="vault")
app.command("unhalt")(control.unhalt)
app.add_typer(control.confirm_app, name="confirm")
app.add_typer(control.settings_app, name="settings")
app.command("run")(run.run)
app.command("agent")(agent.agent)
app.add_typer(verification.app, name="verification")
app.add_typer(smoke.app, name="smoke")
app.command("eval")(eval_cmd.eval_suite)
app.add_typer(sessions.app, name="session")
app.command("ui")(ui.ui)


if __name__ == "__main__":
    app()
