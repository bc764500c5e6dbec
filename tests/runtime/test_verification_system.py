"""The verification kinds that read the machine, for real: files in tmp_path, the process
table with a real process started and killed, and external readback with real commands."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from test_verification import state, window

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.verification import (
    ApplicationStateSpec,
    ExternalReadbackSpec,
    FileSpec,
    VerificationReason,
    VerificationSpec,
)
from deskpilot.protocol.wire import AppIdentity
from deskpilot.runtime.verification import (
    READ_CAP,
    STDOUT_CAP,
    Evidence,
    Verdict,
    check_specs,
    verify,
)
from deskpilot.runtime.verification.processes import processes


async def one(
    spec: VerificationSpec,
    *,
    started: float = 0.0,
    allow: bool = False,
    ev: Evidence | None = None,
) -> Verdict:
    ev = ev or Evidence(state=None, windows=None, task_started_at=started)
    (v,) = await verify([spec], ev, allow_external_readback=allow)
    return v


# ------------------------------------------------------------------ file


async def test_file_exists_contains_equals(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello world\n", encoding="utf-8")
    assert (await one(FileSpec(path=str(f), assertion="exists"))).passed is True
    gone = await one(FileSpec(path=str(tmp_path / "missing.txt"), assertion="exists"))
    assert gone.passed is False and gone.evidence["exists"] is False
    assert (await one(FileSpec(path=str(f), assertion="contains", text="o w"))).passed
    assert (await one(FileSpec(path=str(f), assertion="contains", text="bye"))).passed is False
    # equals ignores the one trailing newline editors add, nothing more
    assert (await one(FileSpec(path=str(f), assertion="equals", text="hello world"))).passed
    assert (await one(FileSpec(path=str(f), assertion="equals", text="hello"))).passed is False
    exact = await one(FileSpec(path=str(f), assertion="equals", text="hello world\n"))
    assert exact.passed is True
    directory = await one(FileSpec(path=str(tmp_path), assertion="contains", text="x"))
    assert directory.passed is False and directory.evidence["note"] == "not a regular file"


async def test_file_contents_never_reach_the_evidence(tmp_path: Path) -> None:
    f = tmp_path / "secret.txt"
    f.write_text("token=sk-abcdef", encoding="utf-8")
    v = await one(FileSpec(path=str(f), assertion="contains", text="nope"))
    assert v.passed is False and "sk-abcdef" not in repr(v.to_json()["evidence"])


async def test_file_sha256(tmp_path: Path) -> None:
    f = tmp_path / "data.bin"
    data = os.urandom(4096)
    f.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    ok = await one(FileSpec(path=str(f), assertion="sha256", expected=digest.upper()))
    assert ok.passed is True and ok.evidence["sha256"] == digest
    bad = await one(FileSpec(path=str(f), assertion="sha256", expected="0" * 64))
    assert bad.passed is False


async def test_file_modified_after_the_task_started(tmp_path: Path) -> None:
    f = tmp_path / "out.txt"
    f.write_text("x")
    started = time.time()
    os.utime(f, (started - 60, started - 60))
    before = await one(FileSpec(path=str(f), assertion="modified_after_start"), started=started)
    assert before.passed is False and before.evidence["taskStartedAt"] == started
    f.write_text("y")  # a real write now
    os.utime(f, None)
    after = await one(FileSpec(path=str(f), assertion="modified_after_start"), started=started)
    assert after.passed is True
    missing = tmp_path / "never.txt"
    absent = await one(FileSpec(path=str(missing), assertion="modified_after_start"))
    assert absent.passed is False


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


async def test_file_read_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    _sparse(big, READ_CAP + 1)  # no 16 MiB written
    over = await one(FileSpec(path=str(big), assertion="contains", text="x"))
    assert over.passed is None and "16 MiB read cap" in over.evidence["undecidable"]
    assert over.reason == VerificationReason.UNSUPPORTED_EVIDENCE
    # equals on a size that cannot match is decided without reading
    eq = await one(FileSpec(path=str(big), assertion="equals", text="small"))
    assert eq.passed is False and eq.evidence["note"] == "the size differs"


async def test_file_home_path_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "here.txt").write_text("x")
    v = await one(FileSpec(path="~/here.txt", assertion="exists"))
    assert v.passed is True and v.evidence["path"] == str(tmp_path / "here.txt")


def test_file_spec_shapes() -> None:
    with pytest.raises(ValidationError, match="absolute"):
        FileSpec(path="notes.txt", assertion="exists")
    with pytest.raises(ValidationError, match="needs 'text'"):
        FileSpec(path="/x", assertion="contains")
    with pytest.raises(ValidationError, match="64 hex digits"):
        FileSpec(path="/x", assertion="sha256", expected="xyz")
    with pytest.raises(ValidationError, match="takes no 'text'"):
        FileSpec(path="/x", assertion="exists", text="y")


# ------------------------------------------------------------------ running (the process table)


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


@pytest.fixture
async def sleeper(tmp_path: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """A real process under a name nothing else has: /bin/sleep through a unique symlink."""
    name = "dpv" + secrets.token_hex(4)
    link = tmp_path / name
    link.symlink_to("/bin/sleep")
    proc = await asyncio.create_subprocess_exec(str(link), "30")
    try:
        for _ in range(100):  # until exec has replaced the forked child's name
            if _comm(proc.pid) == name:
                break
            await asyncio.sleep(0.01)
        yield name, proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def running(app: str | None, expected: bool = True) -> ApplicationStateSpec:
    return ApplicationStateSpec(assertion="running", app=app, expected=expected)


async def test_running_true_then_false_after_kill(
    sleeper: tuple[str, asyncio.subprocess.Process],
) -> None:
    name, proc = sleeper
    alive = await one(running(name))
    assert alive.passed is True
    assert alive.evidence["processes"] == [{"pid": proc.pid, "comm": name}]
    assert (await one(running(name.upper(), expected=False))).passed is False
    assert (await one(running(str(proc.pid)))).passed is True
    proc.kill()
    await proc.wait()
    gone = await one(running(name, expected=False))
    assert gone.passed is True and gone.reason == VerificationReason.ASSERTION_PASSED
    assert gone.evidence["running"] is False and gone.evidence["processTable"] == "/proc"
    assert (await one(running(name))).passed is False


def test_a_killed_unreaped_child_is_not_running(tmp_path: Path) -> None:
    name = "dpv" + secrets.token_hex(4)
    (tmp_path / name).symlink_to("/bin/sleep")
    proc = subprocess.Popen([str(tmp_path / name), "30"])  # nobody reaps it until poll()
    try:
        for _ in range(200):
            if _comm(proc.pid) == name:
                break
            time.sleep(0.01)
        assert asyncio.run(one(running(name))).passed is True
        os.kill(proc.pid, signal.SIGKILL)
        for _ in range(200):  # until the kernel has made it a zombie (state Z)
            if Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                break
            time.sleep(0.01)
        assert Path(f"/proc/{proc.pid}").exists()  # still in the table, as a zombie
        assert asyncio.run(one(running(name, expected=False))).passed is True
    finally:
        proc.kill()
        proc.wait()


async def test_running_by_desktop_id_finds_the_executable_through_the_windows(
    sleeper: tuple[str, asyncio.subprocess.Process],
) -> None:
    name, proc = sleeper
    app = AppIdentity(pid=proc.pid, executable=name, desktop_id="org.example.Sleeper.desktop")
    ev = Evidence(state=None, windows=[window("0x9", "Sleeper", app)], task_started_at=0.0)
    v = await one(running("org.example.Sleeper"), ev=ev)
    assert v.passed is True and name in v.evidence["lookedFor"]


async def test_running_without_an_app_means_the_observed_process(
    sleeper: tuple[str, asyncio.subprocess.Process],
) -> None:
    name, proc = sleeper
    observed = AppIdentity(pid=proc.pid, executable=name)
    ev = Evidence(state=state(app=observed), windows=None, task_started_at=0.0)
    assert (await one(running(None), ev=ev)).passed is True
    proc.kill()
    await proc.wait()
    assert (await one(running(None, expected=False), ev=ev)).passed is True
    assert (await one(running(None), ev=ev)).passed is False


async def test_the_observed_process_is_that_pid_not_another_instance(
    sleeper: tuple[str, asyncio.subprocess.Process], tmp_path: Path
) -> None:
    name, first = sleeper
    second = await asyncio.create_subprocess_exec(str(tmp_path / name), "30")
    try:
        ev = Evidence(
            state=state(app=AppIdentity(pid=first.pid, executable=name)),
            windows=None,
            task_started_at=0.0,
        )
        first.kill()
        await first.wait()
        assert (await one(running(None, expected=False), ev=ev)).passed is True
        assert (await one(running(name))).passed is True  # by name: the other one runs
    finally:
        second.kill()
        await second.wait()


async def test_an_app_nobody_runs_is_decided_not_running() -> None:
    nobody = "dpv-none-" + secrets.token_hex(4)
    absent = await one(running(nobody, expected=False))
    assert absent.passed is True and absent.evidence["processes"] == []
    assert (await one(running(nobody))).passed is False


# ------------------------------------------------------------------ external readback


def readback(*argv: str, **kw: Any) -> ExternalReadbackSpec:
    return ExternalReadbackSpec(argv=list(argv), **kw)


async def test_readback_exit_code_and_stdout() -> None:
    echo = await one(
        readback("/bin/echo", "hello", "world", stdout_equals="hello world"), allow=True
    )
    assert echo.passed is True and echo.evidence["exitCode"] == 0
    assert echo.evidence["stdoutBytes"] == len("hello world\n")
    contains = readback("/bin/echo", "total: 42", stdout_contains="42")
    assert (await one(contains, allow=True)).passed is True
    wrong = await one(readback("/bin/echo", "total: 41", stdout_contains="42"), allow=True)
    assert wrong.passed is False and wrong.reason == VerificationReason.ASSERTION_FAILED
    false = await one(readback("/bin/false"), allow=True)
    assert false.passed is False and false.evidence["exitCode"] == 1
    assert (await one(readback("/bin/false", expect_exit=1), allow=True)).passed is True
    on_path = await one(readback("echo", "x", stdout_equals="x"), allow=True)
    assert on_path.passed is True  # found on PATH, still no shell


async def test_readback_uses_no_shell() -> None:
    v = await one(
        readback("/bin/echo", "$HOME; rm -rf /", stdout_equals="$HOME; rm -rf /"), allow=True
    )
    assert v.passed is True


async def test_readback_timeout_kills_the_command(tmp_path: Path) -> None:
    name = "dpv" + secrets.token_hex(4)
    (tmp_path / name).symlink_to("/bin/sleep")
    t0 = time.monotonic()
    v = await one(readback(str(tmp_path / name), "5", timeout_ms=300), allow=True)
    took = time.monotonic() - t0
    assert v.passed is False and v.evidence["timedOut"] is True
    assert took < 3.0
    assert not any(name in p.names for p in processes())


async def test_readback_stdout_is_capped() -> None:
    spec = readback("/usr/bin/head", "-c", str(STDOUT_CAP + 5000), "/dev/zero", stdout_contains="x")
    v = await one(spec, allow=True)
    assert v.evidence["stdoutBytes"] == STDOUT_CAP and v.evidence["stdoutCut"] == STDOUT_CAP
    assert v.passed is None  # not in the first MiB; the rest was dropped unread


async def test_readback_is_refused_unless_allowed() -> None:
    spec = readback("/bin/echo", "x")
    with pytest.raises(DeskpilotError) as e:
        check_specs([spec], allow_external_readback=False)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    assert "allowExternalReadback" in e.value.message
    assert e.value.details["setting"] == "allowExternalReadback"
    check_specs([spec], allow_external_readback=True)
    # verify does not run it either when not allowed (settings changed since the start)
    v = await one(readback("/bin/false"), allow=False)
    assert v.passed is None and v.evidence["refused"] is True


async def test_a_program_that_cannot_start_is_refused_up_front(tmp_path: Path) -> None:
    missing = readback(str(tmp_path / "no-such-program"))
    with pytest.raises(DeskpilotError) as e:
        check_specs([missing], allow_external_readback=True)
    assert e.value.code == ErrorCode.INVALID_REQUEST and "not an executable" in e.value.message
    with pytest.raises(DeskpilotError):
        check_specs([readback("deskpilot-no-such-program-xyz")], allow_external_readback=True)
    v = await one(missing, allow=True)  # had it slipped through: undecidable, nothing ran
    assert v.passed is None and "could not start" in v.evidence["undecidable"]


def test_readback_spec_shapes() -> None:
    with pytest.raises(ValidationError):
        ExternalReadbackSpec(argv=[])
    with pytest.raises(ValidationError):
        readback("/bin/true", timeout_ms=50)
    with pytest.raises(ValidationError):
        readback("/bin/true", timeout_ms=30_001)
    with pytest.raises(ValidationError, match="not both"):
        readback("/bin/true", stdout_contains="a", stdout_equals="a")
    spec = ExternalReadbackSpec.model_validate({"argv": ["/bin/true"], "expectExit": 3})
    assert (spec.timeout_ms, spec.expect_exit) == (5_000, 3)
