"""deskpilot.provider."""
