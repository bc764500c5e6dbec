"""``python -m deskpilot`` is the ``deskpilot`` command (the smoke runner spawns the agent so)."""

from deskpilot.cli.main import app

app(prog_name="deskpilot")
