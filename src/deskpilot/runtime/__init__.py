"""deskpilot.runtime."""
