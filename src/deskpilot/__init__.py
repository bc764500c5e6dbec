"""deskpilot: governed computer use for Linux desktops."""

__version__ = "0.1.0"
