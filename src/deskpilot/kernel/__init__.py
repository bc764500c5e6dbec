"""deskpilot.kernel: broker, policy, sessions and timeline, desktop coordinator, kill switch,
flags and rollout. Entry points use :class:`Kernel`."""

from deskpilot.kernel.broker import Broker, BrokerResult
from deskpilot.kernel.service import HaltInfo, Kernel

__all__ = ["Broker", "BrokerResult", "HaltInfo", "Kernel"]
