"""What one command's scan has found so far, and where the paths it names resolve.

:class:`Scan` collects the signals per level while the raters walk the simple commands, and
rates every path word they hand it: read or written, resolved after ``~``, ``..``, absolute
paths, symlinks, live globs and ``cd`` (its ``base``), measured against the working directory
(``root``) and the sensitive paths (:func:`sensitive_roots`).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from deskpilot.kernel.policy.shell_parse import GLOB_CHARS, unmask
from deskpilot.kernel.policy.shell_tables import HOME_SENSITIVE, SAFE_DEVICES, SYSTEM_SENSITIVE
from deskpilot.protocol.session import RiskLevel


def inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or under it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def sensitive_roots() -> tuple[str, ...]:
    """Credentials, login scripts and deskpilot's own state (its database, vault, settings):
    naming any of them is L3 whatever the command."""
    home = os.path.expanduser("~")
    data = os.environ.get("DESKPILOT_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "deskpilot"
    )
    paths = [os.path.join(home, p) for p in HOME_SENSITIVE] + [*SYSTEM_SENSITIVE, data]
    return tuple(os.path.realpath(os.path.expanduser(p)) for p in paths)


@dataclass
class Scan:
    """The signals one command has raised so far, by level, and where its paths resolve."""

    root: str
    #: where relative paths resolve now (``cd`` moves it); None once it cannot be known
    base: str | None
    sensitive: tuple[str, ...]
    found: dict[RiskLevel, list[str]] = field(default_factory=dict)

    def add(self, level: RiskLevel, code: str) -> None:
        codes = self.found.setdefault(level, [])
        if code not in codes:
            codes.append(code)

    def resolve(self, word: str) -> list[str] | None:
        """Absolute, symlink-resolved paths a word names (its live globs expanded); None when
        it depends on a variable, an unknown user's home or a directory ``cd`` lost."""
        if "$" in word:
            return None
        head, rest = "", word
        if word.startswith("~"):
            user, sep, tail = word.partition("/")
            home = os.path.expanduser(unmask(user))
            if home.startswith("~"):
                return None
            head, rest = home + sep, tail
        elif not unmask(word).startswith("/"):
            if self.base is None:
                return None
            head = self.base + "/"
        literal = head + unmask(rest)
        candidates = [literal]
        if any(
            c in GLOB_CHARS for c in rest
        ):  # quoted glob characters are masked, not in GLOB_CHARS
            pattern = glob.escape(head) + "".join(
                c if c in GLOB_CHARS else glob.escape(unmask(c)) for c in rest
            )
            candidates = glob.glob(pattern, include_hidden=True) or [literal]
        return [os.path.realpath(c) for c in candidates]

    def is_sensitive(self, path: str, *, recursive: bool = False) -> bool:
        if any(inside(path, s) for s in self.sensitive):
            return True
        if recursive and any(inside(s, path) for s in self.sensitive):
            return True
        parts = path.split("/")
        return ".git" in parts and parts[parts.index(".git") + 1 : parts.index(".git") + 2] in (
            ["hooks"],
            ["config"],
        )

    def read(self, word: str, *, recursive: bool = False) -> None:
        paths = self.resolve(word)
        if paths is None:
            self.add(RiskLevel.L2, "reads_outside_cwd")
            return
        for p in paths:
            if self.is_sensitive(p, recursive=recursive):
                self.add(RiskLevel.L3, "sensitive_path")
            elif not inside(p, self.root):
                self.add(RiskLevel.L2, "reads_outside_cwd")

    def write(self, word: str) -> None:
        literal = os.path.normpath(unmask(word)) if "$" not in word else ""
        if literal in SAFE_DEVICES or literal.startswith("/dev/fd/"):
            return
        paths = self.resolve(word)
        if paths is None:
            self.add(RiskLevel.L3, "write_outside_cwd")
            return
        for p in paths:
            if self.is_sensitive(p):
                self.add(RiskLevel.L3, "sensitive_path")
            elif not inside(p, self.root):
                self.add(RiskLevel.L3, "write_outside_cwd")
            else:
                self.add(RiskLevel.L2, "writes_in_cwd")
