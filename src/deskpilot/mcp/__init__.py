"""deskpilot.mcp."""
