"""deskpilot.provider: OpenAI-compatible text-only chat endpoints driven through deskpilot's own
local JSON action protocol. The endpoint only generates text; parsing, validation, repair,
retries and the tool whitelist are ours.

    from deskpilot.provider import Provider, ProviderConfig, ToolSpec, ChatMessage, TurnResult
"""

from deskpilot.provider.config import ProviderConfig, RuntimePolicy, load_config
from deskpilot.provider.contract import ProviderError
from deskpilot.provider.orchestrator import Provider
from deskpilot.provider.protocol import PROTOCOL_VERSION, ChatMessage, ToolCall
from deskpilot.provider.telemetry import DebugLog, MemoryTelemetry, NullTelemetry
from deskpilot.provider.tools import ToolSpec, tools_from_json
from deskpilot.provider.turn import ExecutionLedger, TurnResult, Verdict, evaluate

__all__ = [
    "PROTOCOL_VERSION",
    "ChatMessage",
    "DebugLog",
    "ExecutionLedger",
    "MemoryTelemetry",
    "NullTelemetry",
    "Provider",
    "ProviderConfig",
    "ProviderError",
    "RuntimePolicy",
    "ToolCall",
    "ToolSpec",
    "TurnResult",
    "Verdict",
    "evaluate",
    "load_config",
    "tools_from_json",
]
