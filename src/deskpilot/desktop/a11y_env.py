"""What an app's environment needs for its accessibility tree, and whether GTK 2 can have one.

Toolkits decide at start whether to export a tree, from their environment: GTK 3 and 4 from
``NO_AT_BRIDGE``/``GTK_A11Y``, Qt from ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON``, Chromium and
Firefox from ``ACCESSIBILITY_ENABLED``. GTK 2 (GIMP 2.10) has no bridge of its own: it loads
the modules ``GTK_MODULES`` names, and only ``gail`` (Debian's ``libgail-common``) with
``atk-bridge`` (``libatk-adaptor``) give it a tree. A desktop session gets
``GTK_MODULES=gail:atk-bridge`` from ``libatk-adaptor``'s own login scripts
(``/etc/X11/Xsession.d/90atk-adaptor``, ``/etc/environment.d/90atk-adaptor.conf``); the private
desktop and every app deskpilot starts get it here. GTK 3 skips those two names (its bridge is
built in) and GTK 4 and Qt do not read the variable, so it is set for every app.

:func:`gtk2_bridge` says whether this machine has both modules and whether this session's
environment names them, in the words ``deskpilot doctor`` prints.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

#: the GTK 2 modules that give a GTK 2 app an AT-SPI tree, in load order
GTK2_MODULES: Final = ("gail", "atk-bridge")
#: each module's file in GTK 2's module directory, and the Debian package that ships it
GTK2_MODULE_PACKAGES: Final = {
    "libgail.so": "libgail-common",
    "libatk-bridge.so": "libatk-adaptor",
}
GTK2_LIBRARY: Final = "libgtk-x11-2.0.so.0"
#: where a distribution puts GTK 2 (Debian: the multiarch directory)
LIB_DIRS: Final = ("/usr/lib/*-linux-gnu", "/usr/lib64", "/usr/lib")

#: the variables every app deskpilot starts (and the private desktop's session) gets
ACCESSIBILITY_ENV: Final = {
    "NO_AT_BRIDGE": "0",
    "GTK_A11Y": "atspi",
    "ACCESSIBILITY_ENABLED": "1",
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
}


def gtk_modules(current: str | None) -> str:
    """``GTK_MODULES`` with ``gail`` and ``atk-bridge`` added after what it names already
    (as libatk-adaptor's login script adds them; a module named twice is loaded once)."""
    names = [m for m in (current or "").split(":") if m]
    names += [m for m in GTK2_MODULES if m not in names]
    return ":".join(names)


def with_accessibility(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with what an app needs to export its accessibility tree."""
    out = dict(env)
    out.update(ACCESSIBILITY_ENV)
    out["GTK_MODULES"] = gtk_modules(env.get("GTK_MODULES"))
    return out


@dataclass(frozen=True, slots=True)
class Gtk2Bridge:
    """Can a GTK 2 app get a tree here? ``state``: ``ok``, ``no_gtk2`` (nothing to do),
    ``missing_packages`` (``missing`` names them), ``session_lacks_modules`` (installed, but
    this session's ``GTK_MODULES`` does not name them: apps a person starts get no tree)."""

    state: str
    advice: str
    missing: tuple[str, ...] = ()
    session_modules: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "missing": list(self.missing),
            "sessionModules": self.session_modules,
            "advice": self.advice,
        }


def gtk2_bridge(env: Mapping[str, str], lib_dirs: Sequence[str] = LIB_DIRS) -> Gtk2Bridge:
    """What this machine and the session in ``env`` give GTK 2 apps (files only, no process
    started)."""
    session = env.get("GTK_MODULES") or None
    gtk2 = _gtk2_dir(lib_dirs)
    if gtk2 is None:
        return Gtk2Bridge("no_gtk2", "no GTK 2 library installed: nothing needed", (), session)
    modules = os.path.join(gtk2, "gtk-2.0", "modules")
    missing = tuple(
        package
        for module, package in GTK2_MODULE_PACKAGES.items()
        if not os.path.isfile(os.path.join(modules, module))
    )
    if missing:
        return Gtk2Bridge(
            "missing_packages",
            f"GTK 2 apps (GIMP 2.10) have no accessibility tree: install {' '.join(missing)} "
            f"(apt-get install {' '.join(missing)}); until then they are read by OCR of "
            "their screenshot",
            missing,
            session,
        )
    named = set((session or "").split(":"))
    if not set(GTK2_MODULES) <= named:
        return Gtk2Bridge(
            "session_lacks_modules",
            "GTK 2 apps that deskpilot starts (and all apps in its private desktop) get "
            "GTK_MODULES=gail:atk-bridge; ones started from this session get no tree: "
            "libatk-adaptor sets it at login (/etc/X11/Xsession.d/90atk-adaptor, "
            "/etc/environment.d/90atk-adaptor.conf), so log out and in once, or start them "
            "with GTK_MODULES=gail:atk-bridge",
            (),
            session,
        )
    return Gtk2Bridge("ok", "GTK 2 apps get an accessibility tree", (), session)


def _gtk2_dir(lib_dirs: Sequence[str]) -> str | None:
    """The library directory that holds GTK 2, if one does."""
    for pattern in lib_dirs:
        for lib in sorted(glob.glob(pattern)):
            if os.path.isfile(os.path.join(lib, GTK2_LIBRARY)):
                return lib
    return None
