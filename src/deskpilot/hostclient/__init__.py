"""deskpilot.hostclient."""
