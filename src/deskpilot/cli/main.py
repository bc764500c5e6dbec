"""The ``deskpilot`` command. Sub-commands live in their own modules and only translate.

Each sub-command's module is imported only when that command runs (or ``--help`` lists
them all): importing every one costs ~0.7 s, most of it pydantic models and HTTP clients a
given command never touches, and that cost is paid on every ``deskpilot vault get`` or
``deskpilot agent`` a script or an agent's shell runs.
"""

from __future__ import annotations

import importlib
from typing import Final, cast

import typer
from typer._click import Context  # typer ≥ 0.29 carries its own click (pyproject.toml)
from typer.core import TyperCommand, TyperGroup

#: command name → (module under deskpilot.cli, attribute): a Typer attribute is a command
#: group, a function a single command
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "desktop": ("desktop", "app"),
    "doctor": ("doctor", "doctor"),
    "serve": ("serve", "serve"),
    "observe": ("observe", "observe"),
    "provider": ("provider", "app"),
    "vault": ("vault", "app"),
    "unhalt": ("control", "unhalt"),
    "confirm": ("control", "confirm_app"),
    "settings": ("control", "settings_app"),
    "run": ("run", "run"),
    "agent": ("agent", "agent"),
    "verification": ("verification", "app"),
    "smoke": ("smoke", "app"),
    "eval": ("eval", "eval_suite"),
    "session": ("sessions", "app"),
    "ui": ("ui", "ui"),
}


def load_command(name: str) -> TyperCommand | TyperGroup:
    """The command for ``name`` (one of :data:`COMMANDS`), its module imported now."""
    module_name, attribute = COMMANDS[name]
    target = getattr(importlib.import_module(f"deskpilot.cli.{module_name}"), attribute)
    command: TyperCommand | TyperGroup
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        command = cast(TyperCommand, typer.main.get_command(single))
    command.name = name
    return command


class LazyCommands(TyperGroup):
    """The top-level group: knows its commands by name and loads one when it is asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: Context, cmd_name: str) -> TyperCommand | TyperGroup | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        command = super().get_command(ctx, cmd_name)
        return cast("TyperCommand | TyperGroup | None", command)


app = typer.Typer(
    name="deskpilot",
    cls=LazyCommands,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def main() -> None:
    """Governed computer use for Linux desktops."""


if __name__ == "__main__":
    app()
