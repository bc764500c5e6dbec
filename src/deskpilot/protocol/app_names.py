"""The names an app answers to: one rule for the runtime's ``app`` argument, the host's
``TargetSpec.app`` and the verification engine's ``application_state``.

A process is often not called what people call the app. Debian runs GIMP as ``gimp-2.10``
(``/usr/bin/gimp`` is a link to it), Python as ``python3.11``, LibreOffice as ``soffice.bin``
and Firefox as ``firefox-esr``: an agent that asks for ``gimp`` must find ``gimp-2.10``. So an
executable also answers to its name without a version suffix and without a packaging suffix:

* a **version**: digits at the end after a dash (``gimp-2.10`` → ``gimp``, ``gimp-2``), or
  dotted digits glued to the name (``python3.11`` → ``python``, ``python3``). Digits glued
  on without a dot are part of the name (``x264``, ``mpg123``, ``python3`` itself);
* a **packaging** suffix: ``.bin``, ``-bin``, ``.real``, ``-real``, ``-wrapped``, ``-esr``,
  ``-stable`` (``soffice.bin`` → ``soffice``, ``google-chrome-stable`` → ``google-chrome``).

These are extra names, never instead of the executable's own. A name two processes answer
to is still refused as ambiguous by whoever resolves it (runtime/apps.py): ``python`` with a
``python3.11`` and a ``python3.13`` running names neither.
"""

from __future__ import annotations

import re
from typing import Final

#: suffixes a distribution's packaging adds to an executable's name
PACKAGING_SUFFIXES: Final = (".bin", "-bin", ".real", "-real", "-wrapped", "-esr", "-stable")
#: a version at the end: after a dash (``-2``, ``-2.10``), or dotted right after the name
#: (``3.11``); the name before it must end in a letter (``x86_64`` has no version)
_DASHED: Final = re.compile(r"^(?P<base>.*[a-z])-(?P<major>\d+)(?:\.\d+)*$")
_DOTTED: Final = re.compile(r"^(?P<base>.*[a-z])(?P<major>\d+)(?:\.\d+)+$")


def executable_names(executable: str) -> frozenset[str]:
    """``executable`` (lower-cased) and the names it answers to without its version or
    packaging suffix; empty for an empty name."""
    exe = executable.strip().lower()
    if not exe:
        return frozenset()
    out = {exe}
    for suffix in PACKAGING_SUFFIXES:
        if exe.endswith(suffix) and len(exe) > len(suffix):
            out.add(exe[: -len(suffix)])
    for name in list(out):
        for pattern, sep in ((_DASHED, "-"), (_DOTTED, "")):
            m = pattern.match(name)
            if m is not None:
                out.add(m.group("base"))
                out.add(f"{m.group('base')}{sep}{m.group('major')}")
    return frozenset(out)
