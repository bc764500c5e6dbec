"""The provider's error contract: one JSON manifest read by runtime, health check and validator."""

from deskpilot.provider.contract.errors import ProviderError
from deskpilot.provider.contract.manifest import ErrorContract, ErrorSpec, load_contract

__all__ = ["ErrorContract", "ErrorSpec", "ProviderError", "load_contract"]
