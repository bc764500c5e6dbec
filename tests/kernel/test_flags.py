"""Flags parse like the seed says, each has a real reader, and rollback is off-only and names
the flag it concerns, fed by real producers (the broker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import deskpilot
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import FLAGS, Flags, parse_flag
from deskpilot.kernel.rollout import THRESHOLDS, WINDOW, Metric, RolloutController
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ScrollAction
from deskpilot.store.db import Database

from . import trees
from .backends import RecordedBackend, screen


@pytest.mark.parametrize(
    ("raw", "on"),
    [
        (None, True),
        ("", True),
        ("1", True),
        ("anything", True),
        ("0", False),
        ("false", False),
        (" NO ", False),
        ("Off", False),
    ],
)
def test_only_0_false_no_off_turn_a_flag_off(raw: str | None, on: bool) -> None:
    assert parse_flag(raw) is on


def test_environment_sets_flags() -> None:
    flags = Flags({"DESKPILOT_GRACEFUL_CANCEL": "off", "DESKPILOT_ESCAPE_INTERRUPT": "yes"})
    assert not flags.enabled("gracefulCancel") and flags.enabled("escapeInterrupt")
    assert flags.snapshot()["gracefulCancel"]["source"] == "env"


def test_every_flag_has_a_reader_in_its_consumer_module() -> None:
    src = Path(deskpilot.__file__).parent
    for spec in FLAGS.values():
        path = src.joinpath(*spec.consumer.split(".")[1:]).with_suffix(".py")
        text = path.read_text()
        assert re.search(rf"flags\.enabled\(\s*\"{spec.name}\"", text), spec
    for t in THRESHOLDS.values():
        assert t.flag is None or t.flag in FLAGS


def test_rollback_is_off_only_names_its_flag_and_respects_min_samples() -> None:
    flags = Flags({})
    rollout = RolloutController(flags)
    for _ in range(99):
        rollout.record_takeover_stop(900.0)
    assert flags.enabled("gracefulCancel")  # below the 100-sample minimum
    rollout.record_takeover_stop(900.0)
    assert not flags.enabled("gracefulCancel")
    (rb,) = rollout.rollbacks
    assert rb.flag == "gracefulCancel" and rb.metric == Metric.TAKEOVER_STOP_LATENCY
    assert flags.snapshot()["gracefulCancel"]["source"] == "rollback"
    # nothing turns it back on, however good the numbers get
    for _ in range(WINDOW):
        rollout.record_takeover_stop(1.0)
    assert not flags.enabled("gracefulCancel") and len(rollout.rollbacks) == 1
    assert rollout.value(Metric.TAKEOVER_STOP_LATENCY)[1] == WINDOW  # bounded window


def test_action_error_rate_threshold() -> None:
    flags = Flags({})
    rollout = RolloutController(flags)
    for i in range(500):
        rollout.record_action(i % 100 == 0)  # exactly 1 %: not above the 0.01 limit
    assert flags.enabled("escapeInterrupt")
    rollout.record_action(True)
    assert not flags.enabled("escapeInterrupt")
    assert rollout.rollbacks[0].flag == "escapeInterrupt"


async def test_broker_is_the_producer_of_host_and_action_samples(tmp_path: Path) -> None:
    backend = RecordedBackend(default=screen(trees.EDITOR))
    kernel = Kernel(backend, Database(tmp_path / "db.sqlite3"), flags=Flags({}))
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    backend.fail_with = ErrorCode.ACTION_TIMEOUT  # the host was killed at its timeout
    obs = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError):
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert kernel.rollout.value(Metric.ACTION_ERROR) == (0.5, 2)
    crash_rate, calls = kernel.rollout.value(Metric.HOST_CRASH)
    assert calls == 4 and crash_rate == 0.25  # 2 observes + 2 executes, one died
    assert kernel.rollout.value(Metric.ARTIFACT_FAILURE)[1] == 4
    await kernel.close()
