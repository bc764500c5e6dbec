"""Shell semantics for a POSIX shell tool: PowerShell cmdlets and bare backslash paths are
caught before execution because bash would run them wrongly rather than fail loudly."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SHELL_TOOLS = frozenset({"bash", "sh", "shell", "zsh"})
_CMDLET = re.compile(
    r"(?<![\w-])(?:Get|Set|New|Remove|Select|Where|ForEach|Invoke|Start|Stop|Test|Out|Write|"
    r"Copy|Move|Rename|Add|Clear|Import|Export|ConvertTo|ConvertFrom|Measure|Sort|Format)"
    r"-[A-Z][A-Za-z]+\b"
)
_BACKSLASH_PATH = re.compile(r"(?:^|[\s=])(?:[A-Za-z]:\\|\.{1,2}\\|[\w.-]+\\[\w.-])")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def unquoted(command: str) -> str:
    return _QUOTED.sub(" ", command)


def shell_problem(tool_name: str, arguments: Mapping[str, Any]) -> str | None:
    """A reason to repair, or None when the command is plausible POSIX shell."""
    if tool_name not in SHELL_TOOLS:
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if not isinstance(command, str):
        return None
    bare = unquoted(command)
    if _CMDLET.search(bare):
        return (
            "PowerShell cmdlets were sent to a POSIX shell; use POSIX commands, or call "
            "pwsh/powershell.exe explicitly with a quoted -Command"
        )
    if _BACKSLASH_PATH.search(bare):
        return (
            "an unquoted backslash path was sent to a POSIX shell (bash drops the backslashes); "
            "use forward slashes or quote the path"
        )
    return None
