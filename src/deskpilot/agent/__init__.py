"""deskpilot.agent."""
