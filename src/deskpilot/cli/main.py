"""The ``deskpilot`` command. Sub-commands live in their own modules and only translate."""

from __future__ import annotations

import typer

from deskpilot.cli import control, desktop, doctor, serve

app = typer.Typer(
    name="deskpilot",
    help="Governed computer use for Linux desktops.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(desktop.app, name="desktop")
app.command("doctor")(doctor.doctor)
app.command("serve")(serve.serve)
app.command("unhalt")(control.unhalt)
app.add_typer(control.confirm_app, name="confirm")
app.add_typer(control.settings_app, name="settings")


def _mount_optional() -> None:
    """Mount sub-apps that other modules provide, when present."""
    import importlib

    for module, name in (
        ("deskpilot.cli.provider", "provider"),
        ("deskpilot.cli.vault", "vault"),
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        app.add_typer(mod.app, name=name)


_mount_optional()

if __name__ == "__main__":
    app()
