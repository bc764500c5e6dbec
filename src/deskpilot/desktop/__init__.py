"""A private virtual desktop (Xvfb + D-Bus + AT-SPI) and the sample apps run on it."""

from deskpilot.desktop.virtual import DesktopError, DesktopState, down, load, up

__all__ = ["DesktopError", "DesktopState", "down", "load", "up"]
