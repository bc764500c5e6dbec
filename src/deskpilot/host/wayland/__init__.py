"""The host's Wayland side: frames and input through the compositor's own D-Bus APIs.

Under Wayland no client can read the screen or send input by itself (X11's GetImage and
XTEST have no counterpart): the compositor does it for a client it trusts. On a private
Mutter desktop (``deskpilot desktop up --wayland``, desktop/wayland.py) that is Mutter's
``org.gnome.Mutter.ScreenCast`` and ``org.gnome.Mutter.RemoteDesktop`` on the desktop's own
session bus (:mod:`.mutter_session`); frames arrive over PipeWire (:mod:`.frames`).

What is built so far, and what is not, is in docs/wayland.md.
"""
