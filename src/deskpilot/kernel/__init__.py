"""deskpilot.kernel."""
