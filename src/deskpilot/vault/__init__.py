"""deskpilot.vault."""
