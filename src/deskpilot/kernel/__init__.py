"""deskpilot.kernel: the one door from the runtime to the desktop — broker, policy, sessions
and timeline, frames, desktop coordinator, kill switch, flags and rollout. Callers above hold
a :class:`KernelPort` (kernel/port.py); :class:`Kernel` implements it."""

from deskpilot.kernel.broker import Broker
from deskpilot.kernel.kernel import Kernel
from deskpilot.kernel.port import KernelPort
from deskpilot.kernel.results import ExecutedAction, HaltInfo

__all__ = ["Broker", "ExecutedAction", "HaltInfo", "Kernel", "KernelPort"]
