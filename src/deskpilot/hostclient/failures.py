"""How host-side and connection failures become typed errors for callers.

Capacity refusals are ``environment_unavailable`` carrying the precise diagnostic code, so a
caller that only understands the broad class still does the right thing (wait, try again)
while a log or the doctor can tell which limit was hit.
"""

from __future__ import annotations

from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.host_exits import (
    EXIT_AUTH_FAILURE,
    EXIT_CONFIG,
    EXIT_PROTOCOL_FAILURE,
    SETTING_LINE,
)

#: ``details.reason`` of a host that refused to start for a setting (exit ``EXIT_CONFIG``)
SETTING_INVALID = "host_setting_invalid"


def setting_refused(error: DeskpilotError | None) -> bool:
    """The host refused to start for a setting: starting it again cannot help until the
    environment it is started with changes (a new server process)."""
    return error is not None and error.details.get("reason") == SETTING_INVALID


def capacity_error(diagnostic: ErrorCode, message: str) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.ENVIRONMENT_UNAVAILABLE,
        message,
        retryable=True,
        details={"diagnosticCode": diagnostic.value},
    )


def diagnostic_code(error: DeskpilotError) -> str:
    """The most specific code of an error: its diagnostic code when it carries one."""
    code = error.details.get("diagnosticCode")
    return str(code) if code else error.code.value


def from_error_response(message: dict[str, Any]) -> DeskpilotError:
    """An ``error`` response as a DeskpilotError; an unknown code is kept in the details."""
    raw = message.get("code")
    text = str(message.get("message") or "the host reported an error")
    details = message.get("details")
    details = dict(details) if isinstance(details, dict) else {}
    try:
        code = ErrorCode(str(raw))
    except ValueError:
        code = ErrorCode.INTERNAL_ERROR
        details["hostCode"] = str(raw)
    return DeskpilotError(
        code, text, retryable=bool(message.get("retryable", False)), details=details
    )


def host_exit_error(returncode: int | None, during: str, said: str = "") -> DeskpilotError:
    """What a host that ended on its own means, by exit status (``said``: what it wrote to
    its log meanwhile, where a refused setting is named)."""
    if returncode == EXIT_CONFIG:
        reasons = [
            line.removeprefix(SETTING_LINE).strip()
            for line in said.splitlines()
            if line.startswith(SETTING_LINE)
        ]
        why = "; ".join(reasons) or "a DESKPILOT_* setting in its environment cannot be used"
        # the variables' names alone (no values) are what an agent is shown of them
        names = [r.partition("=")[0] for r in reasons if r.partition("=")[0].isidentifier()]
        return DeskpilotError(
            ErrorCode.ENVIRONMENT_UNAVAILABLE,
            f"the host refused to start: {why}. Fix or unset it and start again.",
            retryable=False,
            details={"exitCode": returncode, "reason": SETTING_INVALID, "settings": names},
        )
    if returncode == EXIT_AUTH_FAILURE:
        return DeskpilotError(
            ErrorCode.NATIVE_HOST_UNTRUSTED,
            f"the host refused to run {during}: it could not verify its parent (exit 77)",
            retryable=False,
            details={"exitCode": returncode},
        )
    if returncode == EXIT_PROTOCOL_FAILURE:
        return DeskpilotError(
            ErrorCode.PROTOCOL_ERROR,
            f"the host ended with a protocol failure {during} (exit 76)",
            retryable=False,
            details={"exitCode": returncode},
        )
    return DeskpilotError(
        ErrorCode.NATIVE_HOST_UNAVAILABLE,
        f"the host process ended {during} (exit status {returncode})",
        retryable=False,
        details={"exitCode": returncode},
    )
