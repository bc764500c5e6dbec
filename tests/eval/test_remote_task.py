"""The remote task's channel (eval/remote_task.py) refuses what is not a task, in order, with
the stage named, and keeps serving; the end of the channel ends it. Spoken over real pipes in
framed JSON, as the ssh channel carries it (the desktop itself: tests/eval/test_eval_ssh.py)."""

from __future__ import annotations

import os
import threading
from typing import Any

from deskpilot.eval.remote_task import TASK_PROTOCOL, serve
from deskpilot.protocol.frames import FrameReader, FrameWriter


class Channel:
    def __init__(self) -> None:
        to_task_r, to_task_w = os.pipe()
        from_task_r, from_task_w = os.pipe()
        self.to_task = os.fdopen(to_task_w, "wb")
        self.writer = FrameWriter(self.to_task)
        self.reader = FrameReader(os.fdopen(from_task_r, "rb", buffering=0))
        self.status: list[int] = []
        task_in, task_out = os.fdopen(to_task_r, "rb", buffering=0), os.fdopen(from_task_w, "wb")
        self.thread = threading.Thread(
            target=lambda: self.status.append(serve(task_in, task_out)), daemon=True
        )
        self.thread.start()

    def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.writer.write_json(msg)
        reply = self.reader.read().json()
        assert isinstance(reply, dict)
        return reply


def test_what_is_not_a_task_is_refused_and_the_channel_goes_on() -> None:
    ch = Channel()
    early = ch.ask({"type": "check", "id": 1})
    assert early["type"] == "error" and early["id"] == 1
    assert early["details"] == {"stage": "request"} and early["code"] == "invalid_request"
    assert "before a task's desktop is up" in early["message"]
    old = ch.ask({"type": "eval_task", "id": 2, "protocolVersion": TASK_PROTOCOL + 1})
    assert old["type"] == "error" and "install the same version" in old["message"]
    bad = ch.ask({"type": "eval_task", "id": 3, "protocolVersion": TASK_PROTOCOL, "task": {}})
    assert bad["type"] == "error" and "not a valid task" in bad["message"]
    shell = {
        "id": "t",
        "instruction": "x",
        "setup": {"launch": [{"app": "sh -c id"}]},
        "success": [{"kind": "file", "path": "/x", "assertion": "exists"}],
    }
    refused = ch.ask(
        {"type": "eval_task", "id": 4, "protocolVersion": TASK_PROTOCOL, "task": shell}
    )
    assert refused["type"] == "error" and "nothing runs a shell" in refused["message"]
    unknown = ch.ask({"type": "shell", "id": 5})
    assert unknown["type"] == "error" and unknown["details"]["stage"] == "request"
    ended = ch.ask({"type": "end", "id": 6})
    assert ended["type"] == "ended" and ended["teardownS"] >= 0
    ch.thread.join(timeout=10)
    assert ch.status == [0]


def test_the_channel_closing_ends_the_task() -> None:
    ch = Channel()
    ch.to_task.close()  # the eval's side went away (its ssh died)
    ch.thread.join(timeout=10)
    assert ch.status == [0]
