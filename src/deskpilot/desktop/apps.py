"""Start the sample apps the tests, benchmarks and demos drive, with the flags they need.

Chromium needs accessibility switched on explicitly and a closed-network set of flags;
Firefox a throwaway profile whose preferences keep it off the network and out of its
first-run pages; mousepad needs a throwaway config dir or it asks to restore a previous
session after a kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from deskpilot.desktop.a11y import list_accessible_apps
from deskpilot.desktop.a11y_env import with_accessibility

CHROMIUM_FLAGS = [
    "--force-renderer-accessibility",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--password-store=basic",
    "--window-position=0,0",
]


class App:
    """A started app: its process, a scratch dir, and clean termination."""

    def __init__(self, proc: subprocess.Popen[bytes], scratch: Path) -> None:
        self.proc = proc
        self.scratch = scratch

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        shutil.rmtree(self.scratch, ignore_errors=True)


def launch(
    argv: list[str],
    env: dict[str, str] | None = None,
    *,
    capture_stdout: bool = False,
) -> App:
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-app-"))
    full_env = with_accessibility(os.environ if env is None else env)
    full_env.setdefault("XDG_CONFIG_HOME", str(scratch / "config"))
    full_env.setdefault("XDG_CACHE_HOME", str(scratch / "cache"))
    proc = subprocess.Popen(
        argv,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return App(proc, scratch)


def chromium_argv(url: str, scratch: Path, *, width: int = 1280, height: int = 800) -> list[str]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    return [
        binary,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={scratch / 'chromium-profile'}",
        f"--window-size={width},{height}",
        url,
    ]


def launch_chromium(url: str, env: dict[str, str] | None = None) -> App:
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-chromium-"))
    app = launch(chromium_argv(url, scratch), env)
    shutil.rmtree(app.scratch, ignore_errors=True)
    app.scratch = scratch
    return app


#: a throwaway Firefox profile's user.js: no first-run or default-browser pages, nothing
#: fetched from the network on its own (updates, telemetry, suggestions, remote settings),
#: no session restore after a kill. Accessibility comes on by itself: the private desktop's
#: AT-SPI bus says IsEnabled (desktop/a11y.py)
FIREFOX_PREFS = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "browser.sessionstore.resume_from_crash": False,
    "browser.newtabpage.activity-stream.feeds.topsites": False,
    "browser.newtabpage.activity-stream.feeds.section.topstories": False,
    "browser.search.suggest.enabled": False,
    "browser.urlbar.suggest.searches": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "app.update.enabled": False,
    "app.normandy.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "services.settings.server": "http://127.0.0.1:9/",
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "signon.rememberSignons": False,
}


def firefox_argv(url: str, profile: Path, *, width: int = 1280, height: int = 800) -> list[str]:
    """``firefox-esr`` on a throwaway ``profile`` (written here), its own instance
    (``--no-remote``: never a window of a Firefox the person runs)."""
    profile.mkdir(parents=True, exist_ok=True)
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in FIREFOX_PREFS.items()]
    (profile / "user.js").write_text("\n".join(lines) + "\n")
    binary = shutil.which("firefox-esr") or shutil.which("firefox") or "firefox-esr"
    return [
        binary,
        "--no-remote",
        "--profile",
        str(profile),
        "--width",
        str(width),
        "--height",
        str(height),
        url,
    ]


def launch_firefox(url: str, env: dict[str, str] | None = None) -> App:
    """Firefox showing ``url`` in a throwaway profile (removed when the app stops)."""
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-firefox-"))
    app = launch(firefox_argv(url, scratch / "profile"), env)
    shutil.rmtree(app.scratch, ignore_errors=True)
    app.scratch = scratch
    return app


async def wait_accessible_async(
    pid: int | None = None,
    name: str | None = None,
    timeout: float = 30.0,
    session_address: str | None = None,
) -> tuple[str, int]:
    """Wait until an app (by pid or accessibility name) is registered with AT-SPI."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            for app_name, app_pid in await list_accessible_apps(session_address):
                if (pid is None or app_pid == pid) and (
                    name is None or app_name.lower() == name.lower()
                ):
                    return app_name, app_pid
        await asyncio.sleep(0.1)
    raise TimeoutError(f"app pid={pid} name={name!r} did not appear on the AT-SPI bus")


def wait_accessible(
    pid: int | None = None,
    name: str | None = None,
    timeout: float = 30.0,
    session_address: str | None = None,
) -> tuple[str, int]:
    """Blocking form of :func:`wait_accessible_async`; usable inside a running event loop too
    (it then waits on a private loop in a worker thread)."""
    coro_args = (pid, name, timeout, session_address)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait_accessible_async(*coro_args))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(wait_accessible_async(*coro_args))).result()


def launch_accessible(
    argv: list[str], *, capture_stdout: bool = False, timeout: float = 30.0
) -> App:
    """Launch an app and wait until it is on the AT-SPI bus; one relaunch when it never shows
    up (a GTK app that loses the race with the registry at start stays invisible for good,
    seen now and then on a loaded 2-core machine)."""
    for attempt in (1, 2):
        app = launch(argv, capture_stdout=capture_stdout)
        try:
            wait_accessible(pid=app.pid, timeout=timeout)
            return app
        except TimeoutError:
            app.stop()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
