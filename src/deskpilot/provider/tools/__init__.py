"""Tools: specs, selection, argument validation, fingerprints, repeat and shell policy."""

from deskpilot.provider.tools.fingerprint import canonical_call, fingerprint, json_equal, tools_hash
from deskpilot.provider.tools.selection import Selection, select_tools
from deskpilot.provider.tools.shell_guard import shell_problem
from deskpilot.provider.tools.spec import ToolSpec, tools_from_json
from deskpilot.provider.tools.validator import ValidationReport, validate_arguments

__all__ = [
    "Selection",
    "ToolSpec",
    "ValidationReport",
    "canonical_call",
    "fingerprint",
    "json_equal",
    "select_tools",
    "shell_problem",
    "tools_from_json",
    "tools_hash",
    "validate_arguments",
]
