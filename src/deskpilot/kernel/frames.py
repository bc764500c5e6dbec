"""Each session's current observation: the one place in this process where a frame's
freshness is decided.

An action must quote the frameId and treeVersion of its session's current observation, or it
fails with ``stale_frame`` / ``stale_tree`` before anything reaches the host. An action
consumes the frame (the host drops its binding after every action), unless its reply carries
a complete post-action observation, which becomes the new current one. A reconnect drops
them all: a new host knows none of the old frames. The host checks the frame again on its
side (a separate process, rightly); nothing else does.

A frame may take a while between the host's reply and the store (the kernel's OCR outline,
kernel/visual_tree.py, costs hundreds of milliseconds); a pause, stop, takeover or reconnect
that drops the session's frame meanwhile must not be undone by that late put. So each drop
moves a generation on: the caller notes :meth:`generation` before the wait and passes it to
:meth:`put`, which keeps the frame only if no drop came in between.
"""

from __future__ import annotations

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import Observation


class CurrentFrames:
    def __init__(self) -> None:
        self._current: dict[str, ObservedState] = {}
        #: drops of each session's frame, and of every frame (both only grow)
        self._drops: dict[str, int] = {}
        self._drops_all = 0

    def __len__(self) -> int:
        return len(self._current)

    def generation(self, session_id: str) -> int:
        """How often the session's frame was dropped (singly or with all); a put noted with
        an older value comes after a drop and is not kept."""
        return self._drops_all + self._drops.get(session_id, 0)

    def put(self, session_id: str, state: ObservedState, *, since: int | None = None) -> bool:
        """Make ``state`` the session's current frame, unless ``since`` (its
        :meth:`generation` before the caller waited) shows a drop came meanwhile; whether it
        was kept."""
        if since is not None and since != self.generation(session_id):
            return False
        self._current[session_id] = state
        return True

    def get(self, session_id: str) -> ObservedState | None:
        return self._current.get(session_id)

    def check(self, session_id: str, frame_id: str, tree_version: str) -> Observation:
        """The current observation, when ``frame_id``/``tree_version`` name it; else why not."""
        state = self._current.get(session_id)
        obs = state.observation if state is not None else None
        if obs is None or obs.frame_id != frame_id:
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                f"frame {frame_id!r} is not the session's current observation; observe again "
                "and use the new element ids",
                details={"frameId": frame_id, "currentFrameId": obs.frame_id if obs else None},
            )
        if obs.tree_version != tree_version:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the element tree changed since that observation; observe again and use the "
                "new element ids",
                details={"treeVersion": tree_version, "currentTreeVersion": obs.tree_version},
            )
        return obs

    def consume(self, session_id: str) -> None:
        """The action is on its way to the host, which forgets the frame either way."""
        self._current.pop(session_id, None)

    def drop(self, session_id: str | None = None) -> None:
        """Forget one session's frame (paused, stopped, re-bound), or every frame."""
        if session_id is None:
            self._current.clear()
            self._drops_all += 1
        else:
            self._current.pop(session_id, None)
            self._drops[session_id] = self._drops.get(session_id, 0) + 1
