"""deskpilot.cli."""
