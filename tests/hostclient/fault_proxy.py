"""A relay between the host client and the real host that answers some requests with errors.

The real host (``python -m deskpilot.host``) runs as this process's child and serves every
request except the ones a fault rule claims. Rules come from ``DESKPILOT_TEST_FAULTS``:
``type=code:count[:final]``, separated by ``;`` — the first ``count`` requests of that type
get an ``error`` response with that code, marked retryable unless ``final`` is given. So the
client under test talks to a real host, and the host's rarely-seen retryable errors can be
produced on demand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

from deskpilot.protocol.frames import FrameReader, FrameWriter, StreamClosed
from deskpilot.protocol.wire import carries_binary


def parse_rules(text: str) -> dict[str, list[Any]]:
    rules: dict[str, list[Any]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        rtype, _, spec = part.partition("=")
        fields = spec.split(":")
        rules[rtype] = [fields[0], int(fields[1]), len(fields) < 3 or fields[2] != "final"]
    return rules


def main() -> None:
    rules = parse_rules(os.environ.get("DESKPILOT_TEST_FAULTS", ""))
    host = subprocess.Popen(
        [sys.executable, "-m", "deskpilot.host"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert host.stdin is not None and host.stdout is not None
    out = FrameWriter(sys.stdout.buffer)
    lock = threading.Lock()
    to_host = FrameWriter(host.stdin)

    def from_host() -> None:
        reader = FrameReader(host.stdout)  # type: ignore[arg-type]
        while True:
            try:
                frame = reader.read()
            except Exception:
                os._exit(0)
            msg = frame.json()
            binary = reader.read().payload if carries_binary(msg) else None
            with lock:
                out.write_pair(msg, binary)

    threading.Thread(target=from_host, daemon=True).start()
    reader = FrameReader(sys.stdin.buffer)
    while True:
        try:
            frame = reader.read()
        except StreamClosed:
            host.stdin.close()
            host.wait()
            return
        request = frame.json()
        rule = rules.get(request.get("type"))
        if rule is not None and rule[1] > 0:
            rule[1] -= 1
            with lock:
                out.write_json(
                    {
                        "id": request.get("id"),
                        "type": "error",
                        "code": rule[0],
                        "message": f"injected {rule[0]}",
                        "retryable": rule[2],
                    }
                )
            continue
        to_host.write_json(request)


if __name__ == "__main__":
    main()
