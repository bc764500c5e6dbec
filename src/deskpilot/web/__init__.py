"""deskpilot.web."""
