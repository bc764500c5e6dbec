"""HTTP transport for OpenAI-compatible chat completions."""

from deskpilot.provider.transport.budget import RequestBudget, parse_retry_after
from deskpilot.provider.transport.chat_client import ChatClient, ChatResponse, check_payload

__all__ = ["ChatClient", "ChatResponse", "RequestBudget", "check_payload", "parse_retry_after"]
