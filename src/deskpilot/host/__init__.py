"""deskpilot.host."""
