"""The wire protocol and shared vocabulary. Imports nothing else of deskpilot."""

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.frames import (
    MAX_PAYLOAD_BYTES,
    AsyncFrameReader,
    AsyncFrameWriter,
    AsyncPipeFrameReader,
    Frame,
    FrameError,
    FrameKind,
    FramePairing,
    FrameReader,
    FrameWriter,
    StreamClosed,
)
from deskpilot.protocol.wire import PROTOCOL_VERSION

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "PROTOCOL_VERSION",
    "AsyncFrameReader",
    "AsyncFrameWriter",
    "AsyncPipeFrameReader",
    "DeskpilotError",
    "ErrorCode",
    "Frame",
    "FrameError",
    "FrameKind",
    "FramePairing",
    "FrameReader",
    "FrameWriter",
    "StreamClosed",
]
