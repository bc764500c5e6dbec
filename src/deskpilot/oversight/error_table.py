"""What each error code means to a person, and what to do next — English and Chinese.

One table, keyed by :class:`~deskpilot.protocol.errors.ErrorCode` itself, so there is no
second list of codes to drift from the enum: a code added to the enum without an entry here
fails tests/web/test_errors_table.py, and an entry for a code that does not exist cannot be
written at all (seed 003 §12.2: the product this replaces mapped 7 codes, 3 of them names
the enum never had, and showed every other error as a raw English code).

The words are for the person watching, not for a developer: what happened, then what they
(or the agent) should do. Where a code is retryable by default, or ends the host connection
(``ErrorCode.retryable`` / ``drops_connection``), the next step says so; the page also shows
both as flags read from the enum, so they cannot disagree with the code. The agent-facing
texts are elsewhere (``runtime/refusals.py``); these must agree with them in substance.

:func:`describe` answers for any string as well — a code from a newer deskpilot, another
program, or a typo — with a clear "unknown error code" entry instead of a crash or a bare
code. Other pages link a code to its explanation with :func:`link`.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from deskpilot.oversight.i18n import LOCALES
from deskpilot.protocol.errors import ErrorCode

#: the page's sections, in the order of the enum's own comments
GROUPS: tuple[str, ...] = (
    "environment",
    "host",
    "freshness",
    "actions",
    "sessions",
    "vault",
    "vision",
    "other",
)

#: a code shown back to a person is cut to this many characters
_SHOWN_MAX = 64


@dataclass(frozen=True)
class Words:
    """One language's text for a code."""

    sentence: str
    next_step: str


@dataclass(frozen=True)
class Entry:
    """A code's section on the page and its text in both languages."""

    group: str
    en: Words
    zh: Words

    def words(self, locale: str) -> Words:
        return self.zh if locale == "zh" else self.en


@dataclass(frozen=True)
class ErrorText:
    """A code described in one language, with the facts the enum knows about it."""

    code: str
    sentence: str
    next_step: str
    group: str
    known: bool
    retryable: bool
    drops_connection: bool

    @property
    def anchor(self) -> str:
        """The row's id on the errors page (the code itself for a known code)."""
        return self.code if self.known else "unknown"

    @property
    def sentence_parts(self) -> tuple[tuple[str, bool], ...]:
        return code_spans(self.sentence)

    @property
    def next_parts(self) -> tuple[tuple[str, bool], ...]:
        return code_spans(self.next_step)


def code_spans(text: str) -> tuple[tuple[str, bool], ...]:
    """``text`` cut into (part, is_code) at its backticks, so a page shows `deskpilot doctor`
    as code rather than with the backticks; an unpaired backtick stays text."""
    pieces = text.split("`")
    if len(pieces) % 2 == 0:  # an odd number of backticks: the last one is not a code mark
        pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
    return tuple((piece, index % 2 == 1) for index, piece in enumerate(pieces) if piece)


def _e(group: str, en: tuple[str, str], zh: tuple[str, str]) -> Entry:
    return Entry(group, Words(*en), Words(*zh))


TABLE: dict[ErrorCode, Entry] = {
    # -- environment, permissions and capabilities ------------------------------------------
    ErrorCode.ENVIRONMENT_UNAVAILABLE: _e(
        "environment",
        (
            "deskpilot cannot reach the desktop it works on right now: there is no display, "
            "no accessibility bus, or the host is too busy to take another request.",
            "This is often passing: wait a moment and retry. If it keeps happening, open the "
            "Readiness page to see which part (display, D-Bus, AT-SPI) is missing.",
        ),
        (
            "deskpilot 暂时连不上它要操作的桌面：可能没有显示器、没有无障碍总线，"
            "或者宿主进程太忙，接不了新的请求。",
            "这种情况往往是暂时的：稍等片刻再重试。如果反复出现，请打开“就绪状态”页，"
            "看看缺的是哪一部分（显示器、D-Bus 还是 AT-SPI）。",
        ),
    ),
    ErrorCode.COMPUTER_DISABLED: _e(
        "environment",
        (
            "Computer use is switched off in the settings — altogether, or for this kind of "
            "desktop (your own, or a private one deskpilot started). Agents may still look at "
            "the desktop, but they may not act on it.",
            "If you want agents to act here, turn “Computer use enabled” back on on the "
            "Settings page, or this kind of desktop under “Desktops agents may act on”. Until "
            "then, retrying changes nothing.",
        ),
        (
            "设置中关闭了电脑操作——可能是整体关闭，也可能只对这类桌面关闭（你自己的桌面，"
            "或 deskpilot 启动的私有桌面）。智能体仍然可以查看桌面，但不能在上面执行任何操作。",
            "如果希望智能体在这里操作，请在“设置”页重新打开“启用电脑操作”，"
            "或在“智能体可以操作的桌面”中打开这类桌面。在此之前，重试不会有任何效果。",
        ),
    ),
    ErrorCode.SCREEN_PERMISSION_DENIED: _e(
        "environment",
        (
            "deskpilot is not allowed to capture the screen, so it cannot see the windows.",
            "Check the screen-capture permission on the Readiness page and grant it; the same "
            "call may then succeed when retried.",
        ),
        (
            "deskpilot 没有截取屏幕的权限，所以看不到窗口。",
            "请到“就绪状态”页查看屏幕截取权限并授予它；授权之后再重试，同样的调用就可能成功。",
        ),
    ),
    ErrorCode.ACCESSIBILITY_PERMISSION_DENIED: _e(
        "environment",
        (
            "deskpilot cannot read the applications' accessibility tree (AT-SPI is off or "
            "cannot be reached), so it cannot tell buttons, fields and menus apart.",
            "Make sure the AT-SPI accessibility bus runs in this desktop session (the "
            "Readiness page says what is missing), then start the task again.",
        ),
        (
            "deskpilot 读不到应用的无障碍树（AT-SPI 没有开启或者连接不上），"
            "因此分辨不出按钮、输入框和菜单。",
            "请确认当前桌面会话中运行着 AT-SPI 无障碍总线（“就绪状态”页会指出缺了什么），"
            "然后重新开始任务。",
        ),
    ),
    ErrorCode.INPUT_PERMISSION_DENIED: _e(
        "environment",
        (
            "deskpilot may not send keyboard or mouse input to this desktop: the X server "
            "does not offer the XTEST extension, or refuses it.",
            "Use an X server with XTEST (deskpilot's private desktop has it) and check the "
            "Readiness page, then start the task again.",
        ),
        (
            "deskpilot 无法向这个桌面发送键盘或鼠标输入：X 服务器没有提供 XTEST 扩展，"
            "或者拒绝使用。",
            "请换用支持 XTEST 的 X 服务器（deskpilot 自带的私有桌面就支持），"
            "并查看“就绪状态”页，然后重新开始任务。",
        ),
    ),
    ErrorCode.SCREEN_LOCKED: _e(
        "environment",
        (
            "The screen is locked, so nothing on it can be seen or used.",
            "Unlock the screen yourself, then start the task again. An agent cannot, and "
            "should not, unlock it for you.",
        ),
        (
            "屏幕已锁定，上面的内容既看不到，也没法操作。",
            "请你亲自解锁屏幕，然后重新开始任务。智能体不能、也不应该替你解锁。",
        ),
    ),
    ErrorCode.UNSUPPORTED_PLATFORM: _e(
        "environment",
        (
            "This part of deskpilot does not work on this system: it drives X11 desktops on "
            "Linux (not Wayland), and some checks need the process table (/proc).",
            "Run it in an X11 session or on deskpilot's private desktop (`deskpilot desktop "
            "up`). Retrying here will not help.",
        ),
        (
            "deskpilot 的这部分功能在当前系统上用不了：它只能操作 Linux 上的 X11 桌面"
            "（不支持 Wayland），有些检查还需要进程表（/proc）。",
            "请在 X11 会话中，或在 deskpilot 的私有桌面（`deskpilot desktop up`）上运行。"
            "在这里重试没有用。",
        ),
    ),
    # -- the native host and its wire ---------------------------------------------------------
    ErrorCode.NATIVE_HOST_MISSING: _e(
        "host",
        (
            "The deskpilot host process — the part that actually touches the desktop — could "
            "not be found or started.",
            "The connection to the host was closed. Check the installation with `deskpilot "
            "doctor` (reinstall if it is broken), then start the session again.",
        ),
        (
            "找不到或启动不了 deskpilot 宿主进程——真正操作桌面的就是它。",
            "与宿主的连接已经关闭。请用 `deskpilot doctor` 检查安装（有问题就重新安装），"
            "然后重新开始会话。",
        ),
    ),
    ErrorCode.NATIVE_HOST_UNTRUSTED: _e(
        "host",
        (
            "The deskpilot host process failed its trust check: its files are not the "
            "installed ones, or it refused to work for the process that started it.",
            "The connection to the host was closed and nothing was done. Reinstall deskpilot; "
            "in a development checkout set DESKPILOT_HOST_LOCAL_TRUST=1 (docs/security.md).",
        ),
        (
            "deskpilot 宿主进程没有通过信任校验：它的文件与安装时的不一致，"
            "或者它拒绝为启动它的进程工作。",
            "与宿主的连接已经关闭，没有执行任何操作。请重新安装 deskpilot；"
            "如果用的是开发检出的代码，请设置 DESKPILOT_HOST_LOCAL_TRUST=1（见 docs/security.md）"
            "。",
        ),
    ),
    ErrorCode.NATIVE_HOST_INCOMPATIBLE: _e(
        "host",
        (
            "The deskpilot host process comes from a different version and speaks another "
            "protocol.",
            "The connection to the host was closed. Make sure deskpilot and its host come "
            "from the same installation (reinstall if unsure), then start again.",
        ),
        (
            "deskpilot 宿主进程来自另一个版本，通信协议对不上。",
            "与宿主的连接已经关闭。请确认 deskpilot 和宿主来自同一次安装（拿不准就重新安装），"
            "然后重新开始。",
        ),
    ),
    ErrorCode.NATIVE_HOST_UNAVAILABLE: _e(
        "host",
        (
            "The deskpilot host process stopped working: it exited, stopped answering, or "
            "failed more often than a session may restart it.",
            "A session restarts its host once; after that, stop the session and start a new "
            "one. `deskpilot doctor` shows whether the host starts at all.",
        ),
        (
            "deskpilot 宿主进程停止工作了：它已退出、不再响应，"
            "或者出错的次数超过了会话允许的重启次数。",
            "每个会话只会自动重启一次宿主；超过之后，请停止该会话并新开一个。"
            "运行 `deskpilot doctor` 可以看出宿主能否正常启动。",
        ),
    ),
    ErrorCode.NATIVE_HOST_REQUEST_CAPACITY_REACHED: _e(
        "host",
        (
            "Too many requests are waiting at the host at once (64 are already in flight).",
            "The desktop itself is fine: wait a moment and retry. If this keeps happening, an "
            "agent is sending calls faster than they can finish.",
        ),
        (
            "同时发给宿主的请求太多了（已经有 64 个正在处理）。",
            "桌面本身没有问题：稍等片刻再重试。如果一直出现，"
            "说明有智能体发请求的速度比处理的速度还快。",
        ),
    ),
    ErrorCode.NATIVE_HOST_OPERATION_CAPACITY_REACHED: _e(
        "host",
        (
            "Too many desktop operations are queued (64 in flight and 64 more waiting).",
            "Nothing of this call was done. Let the queued operations finish, then retry.",
        ),
        (
            "排队等待的桌面操作太多了（64 个正在执行，另有 64 个在等待）。",
            "这次调用没有执行任何操作。等排队的操作完成后再重试。",
        ),
    ),
    ErrorCode.HOST_HANDSHAKE_FAILED: _e(
        "host",
        (
            "deskpilot started its host process, but the two could not agree on how to talk "
            "to each other.",
            "Check the installation with `deskpilot doctor` and start the session again; if "
            "it keeps failing, reinstall deskpilot.",
        ),
        (
            "deskpilot 启动了宿主进程，但双方没能完成握手，无法建立通信。",
            "请用 `deskpilot doctor` 检查安装，然后重新开始会话；如果一直失败，"
            "请重新安装 deskpilot。",
        ),
    ),
    ErrorCode.PROTOCOL_ERROR: _e(
        "host",
        (
            "The host process sent a message deskpilot could not understand, so deskpilot "
            "ended its connection to it.",
            "A new host is started for the next call (within the session's one restart). If "
            "it happens again, it is a bug: note the session and the time and report it.",
        ),
        (
            "宿主进程发来了一条 deskpilot 无法解析的消息，因此 deskpilot 断开了与它的连接。",
            "下一次调用会启动新的宿主（每个会话限重启一次）。如果再次出现，那就是程序缺陷："
            "请记下会话编号和时间并报告。",
        ),
    ),
    ErrorCode.INVALID_REQUEST: _e(
        "host",
        (
            "The request was refused because something in it is not valid: a missing or "
            "wrong argument, an unknown key name, a value out of range.",
            "Read the message that came with it, correct the argument and send it again; the "
            "same request unchanged is refused again.",
        ),
        (
            "请求无效，已被拒绝：可能缺少参数、参数写错了、键名不存在，或者数值超出了范围。",
            "请阅读随附的说明，改正参数后再发送；原样重发还是会被拒绝。",
        ),
    ),
    ErrorCode.UNSUPPORTED_ACTION: _e(
        "host",
        (
            "That action cannot be done on this element or with this backend — for example an "
            "action name the element does not offer.",
            "Pick an action the element offers (the tree lists them), or another way to the "
            "same end, such as a click or a key press.",
        ),
        (
            "这个操作不能用在该元素上，或者当前后端不支持——比如元素并没有提供这个动作名称。",
            "请选用元素提供的动作（元素树里列出了这些动作），或者换一种方式达到同样的目的，"
            "比如点击或按键。",
        ),
    ),
    # -- observation freshness and targets ------------------------------------------------------
    ErrorCode.STALE_FRAME: _e(
        "freshness",
        (
            "The agent acted on a view of the screen that is no longer the latest one.",
            "Nothing was sent to the desktop, and deskpilot retries once by itself. Otherwise "
            "the agent should look again (get_app_state) and act on the new view — repeating "
            "the same call unchanged fails again.",
        ),
        (
            "智能体所依据的屏幕画面已经不是最新的了。",
            "没有向桌面发送任何操作，deskpilot 会自动重试一次。否则智能体应重新查看"
            "（get_app_state），基于新的画面再操作——原样重复同一个调用仍然会失败。",
        ),
    ),
    ErrorCode.TREE_PARTIAL: _e(
        "freshness",
        (
            "The agent tried to act on an element of a window whose tree was only partly read "
            "(the app was slow or did not answer), so the element numbers cannot be trusted.",
            "Nothing was sent. The agent should read the window again, or act on a point of "
            "the screenshot instead.",
        ),
        (
            "智能体想操作的元素来自一个只读取了一部分的窗口树（应用太慢或没有响应），元素编号不可信。",
            "没有发送任何操作。智能体应重新读取窗口，或改为点击截图上的位置。",
        ),
    ),
    ErrorCode.STALE_TREE: _e(
        "freshness",
        (
            "The window changed after the agent last looked at it, so its element numbers no "
            "longer point at the same things.",
            "Nothing was sent, and deskpilot retries once by itself. Otherwise the agent "
            "should read the window again and use the new element numbers.",
        ),
        (
            "智能体上次查看之后，窗口发生了变化，原来的元素编号已经对不上了。",
            "没有发送任何操作，deskpilot 会自动重试一次。否则智能体应重新读取窗口，"
            "改用新的元素编号。",
        ),
    ),
    ErrorCode.FOCUS_MISMATCH: _e(
        "freshness",
        (
            "The window that would receive the input is not the window this session works "
            "on, so deskpilot refused to send it there.",
            "Nothing was typed or clicked. The agent should look again; if the session's "
            "window has closed, pause the session, pick the right one (Change window) and "
            "resume.",
        ),
        (
            "将要接收输入的窗口并不是本会话正在操作的窗口，所以 deskpilot 拒绝把输入发过去。",
            "没有输入或点击任何内容。智能体应重新查看；如果会话绑定的窗口已经关闭，"
            "请先暂停会话，选好正确的窗口（“更换窗口”），再继续。",
        ),
    ),
    ErrorCode.TARGET_NOT_FOUND: _e(
        "freshness",
        (
            "The window, application or element the agent named is not there (it may have closed).",
            "The agent should list the open windows or applications and look again; if the "
            "app ought to be running, start it.",
        ),
        (
            "智能体指定的窗口、应用或元素不存在（可能已经关闭了）。",
            "智能体应列出当前打开的窗口或应用，再重新查看；如果这个应用本该在运行，"
            "请先把它启动起来。",
        ),
    ),
    ErrorCode.TARGET_AMBIGUOUS: _e(
        "freshness",
        (
            "The name the agent gave matches more than one application, and deskpilot does "
            "not guess which one was meant.",
            "Name the target precisely: by its process id or window id (list_apps and "
            "list_windows show them).",
        ),
        (
            "智能体给出的名称同时对应多个应用，deskpilot 不会去猜指的是哪一个。",
            "请准确指定目标：用进程号或窗口编号（list_apps 和 list_windows 会列出来）。",
        ),
    ),
    ErrorCode.NO_WINDOWS_AVAILABLE: _e(
        "freshness",
        (
            "The application has no window to work on: it may still be starting, or it runs "
            "without one.",
            "Wait a moment and retry, or open the app's window first. This error does not "
            "tell whether an earlier action ran.",
        ),
        (
            "这个应用目前没有可以操作的窗口：它可能还在启动，也可能本来就没有窗口。",
            "稍等片刻后重试，或者先把应用的窗口打开。这个错误并不能说明之前的操作有没有执行。",
        ),
    ),
    ErrorCode.CAPTURE_FAILED: _e(
        "freshness",
        (
            "deskpilot could not take a picture of the window (it may have closed or been "
            "hidden at that moment).",
            "Usually passing: the agent can look at the window again and retry. If it keeps "
            "failing, check that the window is open and not minimised.",
        ),
        (
            "deskpilot 没能截取到这个窗口的画面（那一刻它可能已经关闭或被隐藏了）。",
            "通常只是一时的问题：智能体可以重新查看窗口后重试。如果一直失败，请确认窗口是打开的，"
            "而且没有被最小化。",
        ),
    ),
    ErrorCode.STATE_CHANGED: _e(
        "freshness",
        (
            "The application changed while the action was under way (another app took the "
            "window, or the session changed state), so it is not known whether the action "
            "took effect.",
            "Before anything else the agent must look at the same app again and check on "
            "screen whether it happened; only then retry — never replay it blindly.",
        ),
        (
            "操作进行期间应用发生了变化（窗口被别的应用占用，或者会话的状态变了），"
            "因此无法确定这个操作有没有生效。",
            "智能体必须先重新查看同一个应用，在画面上确认操作是否已经生效，之后才能重试——"
            "不要盲目重复。",
        ),
    ),
    ErrorCode.STATE_ID_INVALID: _e(
        "freshness",
        (
            "The agent used a state token (state_id) that is unknown, already used or "
            "expired; each works once, for 60 seconds.",
            "The agent should call get_app_state for a fresh state and act on that.",
        ),
        (
            "智能体用的状态令牌（state_id）无效：无法识别、已经用过或者已过期；每个令牌只能用一次，"
            "有效期 60 秒。",
            "智能体应调用 get_app_state 获取新的状态，再基于它操作。",
        ),
    ),
    # -- actions --------------------------------------------------------------------------------
    ErrorCode.ACTION_FAILED: _e(
        "actions",
        (
            "The action was sent, but the application or the desktop reported that it did "
            "not work.",
            "Look at the window to see what actually happened before trying again, perhaps "
            "another way (another element, or keys instead of a click).",
        ),
        (
            "操作已经发出，但应用或桌面报告它没有成功。",
            "再试之前，先看看窗口里实际发生了什么；也可以换一种方式（换一个元素，"
            "或者用按键代替点击）。",
        ),
    ),
    ErrorCode.ACTION_TIMEOUT: _e(
        "actions",
        (
            "The action did not finish in time; it may or may not have happened. To be safe, "
            "deskpilot stopped its host process.",
            "The host connection was dropped; a new host starts for the next call (once per "
            "session). Look at the window before deciding anything — the action is not "
            "retried automatically.",
        ),
        (
            "操作没有在规定时间内完成，可能执行了，也可能没有。为了安全，"
            "deskpilot 终止了宿主进程。",
            "与宿主的连接已经断开，下一次调用会启动新的宿主（每个会话限一次）。"
            "做任何决定之前先看看窗口——这个操作不会自动重试。",
        ),
    ),
    ErrorCode.ACTION_NOOP: _e(
        "actions",
        (
            "The action was carried out, but nothing in the window changed.",
            "Doing the same again will most likely change nothing again: the agent should "
            "try another way. Too many of these in a row end the task.",
        ),
        (
            "操作已经执行，但窗口里什么都没有变。",
            "同样的操作再做一次，多半还是没有反应：智能体应该换一种做法。连续太多次没有变化，"
            "任务就会被终止。",
        ),
    ),
    ErrorCode.ACTION_UNCONFIRMED: _e(
        "actions",
        (
            "The action was carried out, but deskpilot could not see whether it had its "
            "effect: the app was busy, did not answer, or the field did not show the text.",
            "The agent should look at the window again before doing anything else, and not "
            "repeat the action blindly: the effect may still come, and a repeat could do it "
            "twice.",
        ),
        (
            "操作已经执行，但 deskpilot 看不到它是否生效：应用正忙、没有应答，或者字段里没有"
            "出现输入的文字。",
            "智能体应该先重新查看窗口，再决定下一步，不要盲目重复这个操作：效果可能稍后才出现，"
            "重复一次可能会做两遍。",
        ),
    ),
    ErrorCode.ACTION_BLOCKED: _e(
        "actions",
        (
            "deskpilot's policy refused this action — for example typing a password, a "
            "purchase, or an app outside the task; the reason code names the rule.",
            "Nothing was done. It should not be retried unchanged: if the task really needs "
            "it, do this step yourself, or widen the task's allowances or the settings.",
        ),
        (
            "deskpilot 的策略拒绝了这个操作——比如输入密码、付款，或者操作任务范围之外的应用；"
            "原因代码会指明是哪条规则。",
            "没有执行任何操作。不应原样重试：如果任务确实需要这一步，请你亲自完成，"
            "或者放宽任务的许可范围或相关设置。",
        ),
    ),
    ErrorCode.APPROVAL_REQUIRED: _e(
        "actions",
        (
            "This action needs your approval before it may run.",
            "Approve or deny it on the Confirmations page (or with `deskpilot confirm`); the "
            "agent waits until you answer or the request expires.",
        ),
        (
            "这个操作需要你批准之后才能执行。",
            "请在“确认请求”页（或用 `deskpilot confirm`）批准或拒绝；在你答复或请求过期之前，"
            "智能体会一直等待。",
        ),
    ),
    ErrorCode.APPROVAL_DENIED: _e(
        "actions",
        (
            "The action needed your confirmation and did not get it: it was denied, the "
            "request expired, or the session was paused or stopped in the meantime.",
            "Nothing was done, and the agent should not retry it unchanged. If you do want it, "
            "let the agent ask again and answer in time (120 seconds by default).",
        ),
        (
            "这个操作需要你确认，但没有得到批准：被拒绝了、请求过期了，"
            "或者期间会话被暂停或停止了。",
            "没有执行任何操作，智能体也不应原样重试。如果你确实需要这个操作，"
            "让智能体重新发起请求，并在时限内答复（默认 120 秒）。",
        ),
    ),
    ErrorCode.APPROVAL_MISMATCH: _e(
        "actions",
        (
            "An action id was reused for a different action, or the same action now rates a "
            "different risk than when it was first recorded.",
            "Nothing was done. The agent should send the action again with a new action id.",
        ),
        (
            "同一个操作编号被用在了另一个操作上，或者同一个操作现在的风险评级与最初记录的不一致。",
            "没有执行任何操作。智能体应换一个新的操作编号重新发送。",
        ),
    ),
    ErrorCode.HANDOFF_REQUIRED: _e(
        "actions",
        (
            "A person has to take this step: you hold the desktop (Take over), you pressed "
            "Escape during an action, or the policy wants a human here.",
            "The agent must not retry now. When you are done, hand the desktop back (Hand "
            "back on the session, or `resume`); the agent looks again before it acts.",
        ),
        (
            "这一步需要由人来完成：你正在接管桌面（“接管”），你在操作进行中按了 Esc，"
            "或者策略要求这里由人处理。",
            "智能体现在不能重试。你处理完之后，把桌面交还给它（在会话上点“交还”，或调用 `resume`）"
            "；"
            "智能体会先重新查看，再继续操作。",
        ),
    ),
    ErrorCode.SENSITIVE_INPUT_BLOCKED: _e(
        "actions",
        (
            "deskpilot refused to look at something sensitive: credential and "
            "authentication apps (password managers, login prompts) are never captured.",
            "Do this step yourself. Nothing of that app was captured or sent to a model.",
        ),
        (
            "deskpilot 拒绝查看敏感内容：凭据类和身份验证类应用（密码管理器、登录提示框）"
            "一律不会被截取。",
            "这一步请你亲自完成。该应用的任何内容都没有被截取，也没有发送给模型。",
        ),
    ),
    # -- sessions, tasks and budgets ------------------------------------------------------------
    ErrorCode.SESSION_CANCELED: _e(
        "sessions",
        (
            "The session was stopped — by you, by the kill switch, or because another agent "
            "took the desktop. A stopped session never continues.",
            "Its host connection was closed. To go on, start a new session or task; the "
            "session's page shows why it was stopped.",
        ),
        (
            "会话已经停止——可能是你手动停止的、紧急停止触发了，或者另一个智能体接管了桌面。"
            "已停止的会话无法再继续。",
            "它与宿主的连接已经关闭。要继续的话，请开始新的会话或任务；"
            "会话页面上会显示停止的原因。",
        ),
    ),
    ErrorCode.SESSION_NOT_FOUND: _e(
        "sessions",
        (
            "There is no session with that id (it may belong to another data directory, or "
            "never existed).",
            "Check the id on the Sessions page, and start a new session if you need one.",
        ),
        (
            "找不到这个编号的会话（它可能属于另一个数据目录，或者根本不存在）。",
            "请在“会话”页核对编号；如有需要，新开一个会话。",
        ),
    ),
    ErrorCode.SESSION_NOT_EXECUTABLE: _e(
        "sessions",
        (
            "The session does not accept actions right now: it is paused, taken over or stopped.",
            "If it is paused, resume it on the Sessions page (or the agent calls resume); a "
            "stopped session needs a new one.",
        ),
        (
            "会话目前不接受操作：它处于暂停、被接管或已停止的状态。",
            "如果是暂停状态，请在“会话”页点“继续”（或让智能体调用 resume）；"
            "已停止的会话只能新开一个。",
        ),
    ),
    ErrorCode.INVALID_STATE_TRANSITION: _e(
        "sessions",
        (
            "That control does not fit the session's current state — for example Resume on "
            "a session that is not paused, or Change window while it runs.",
            "Look at the session's state first: Resume needs a paused session, Change window "
            "needs a pause first, and a stopped session never resumes.",
        ),
        (
            "这个控制操作与会话当前的状态不符——比如对没有暂停的会话点“继续”，"
            "或者在运行中“更换窗口”。",
            "先看一下会话的状态：“继续”要求会话已暂停，“更换窗口”要先暂停，已停止的会话无法继续。",
        ),
    ),
    ErrorCode.ACTUATOR_LEASE_CONFLICT: _e(
        "sessions",
        (
            "Another deskpilot process is driving this desktop at the moment, so nothing was sent.",
            "Wait until the other task is done and retry, or stop the other agent; the "
            "message names the process that holds the desktop.",
        ),
        (
            "另一个 deskpilot 进程正在操作这个桌面，所以这次没有发送任何操作。",
            "等另一个任务结束后再重试，或者停止那个智能体；随附的说明会指出是哪个进程占用着桌面。",
        ),
    ),
    ErrorCode.KILL_SWITCH_ENGAGED: _e(
        "sessions",
        (
            "The kill switch was pressed: every session was stopped, and agents may not act "
            "until the halt is lifted. Looking at the desktop still works.",
            "Agents must not retry. When it is safe, lift the halt with Unhalt on the "
            "Readiness page (or `deskpilot unhalt`); a new MCP client session lifts it too.",
        ),
        (
            "紧急停止已触发：所有会话都已停止，解除之前智能体不能执行任何操作，"
            "但仍然可以查看桌面。",
            "智能体不应重试。确认安全后，请在“就绪状态”页点“解除停止”（或运行 `deskpilot unhalt`）"
            "；"
            "新的 MCP 客户端会话也会解除停止。",
        ),
    ),
    ErrorCode.TASK_STEP_LIMIT_EXCEEDED: _e(
        "sessions",
        (
            "The session used up the number of steps it may take (100 by default for a "
            "delegated task).",
            "The task ends here. Start a new one, perhaps with a smaller goal or a higher "
            "step limit.",
        ),
        (
            "会话用完了允许的步数（委派任务默认 100 步）。",
            "任务到此结束。可以开始一个新任务，目标定得小一些，或者把步数上限调高。",
        ),
    ),
    ErrorCode.TASK_RUNTIME_EXCEEDED: _e(
        "sessions",
        (
            "The session ran longer than it may (20 minutes by default for a delegated task).",
            "The task ends here. Start a new one, perhaps with a smaller goal or a longer "
            "time limit.",
        ),
        (
            "会话的运行时间超过了上限（委派任务默认 20 分钟）。",
            "任务到此结束。可以开始一个新任务，目标定得小一些，或者把时间上限调长。",
        ),
    ),
    ErrorCode.TASK_NOOP_LIMIT_EXCEEDED: _e(
        "sessions",
        (
            "Too many actions in a row changed nothing on screen (8 by default for a "
            "delegated task), so deskpilot did not let the session go on.",
            "The agent is probably stuck on something that does not react. Start again with "
            "a clearer goal, or do the stuck step yourself.",
        ),
        (
            "连续太多次操作都没有让屏幕产生任何变化（委派任务默认 8 次），"
            "所以 deskpilot 不再让会话继续。",
            "智能体很可能卡在了某个没有反应的地方。换一个更明确的目标重新开始，"
            "或者由你亲自完成卡住的那一步。",
        ),
    ),
    ErrorCode.BUDGET_EXHAUSTED: _e(
        "sessions",
        (
            "The task's bounded budget — its time or its number of action attempts — is spent.",
            "Actions are refused from now on; reading the screen still works. The agent "
            "should report to you; a new task starts with a fresh budget.",
        ),
        (
            "任务的有限预算——时间或操作次数——已经用完了。",
            "此后的操作都会被拒绝，但仍可以读取屏幕。智能体应向你汇报；新任务会重新获得一份预算。",
        ),
    ),
    ErrorCode.DECISION_MODEL_ERROR: _e(
        "sessions",
        (
            "The model that decides a delegated task's steps could not be used: it is not "
            "configured, cannot be reached, or kept answering in a form deskpilot cannot use.",
            "Configure it with `deskpilot provider configure` (or the DESKPILOT_PROVIDER_* "
            "variables), check it with `deskpilot provider health`, then start the task again.",
        ),
        (
            "负责决定委派任务每一步的模型无法使用：没有配置、连接不上，"
            "或者它的回答格式始终无法被 deskpilot 使用。",
            "请用 `deskpilot provider configure`（或 DESKPILOT_PROVIDER_* 环境变量）配置模型，"
            "用 `deskpilot provider health` 检查，然后重新开始任务。",
        ),
    ),
    ErrorCode.VERIFICATION_FAILED: _e(
        "sessions",
        (
            "The checks that decide whether the task succeeded did not pass: what should be "
            "on screen (or in a file) is not there.",
            "Look at the desktop to see how far the task got. If the success criteria do not "
            "match what the app really shows, correct them, then start again.",
        ),
        (
            "判断任务是否成功的检查没有通过：屏幕上（或文件里）没有出现应有的结果。",
            "看看桌面，确认任务进行到了哪一步。如果成功判据与应用实际显示的内容不符，请先改正判据，"
            "再重新开始。",
        ),
    ),
    ErrorCode.NOT_AVAILABLE_YET: _e(
        "sessions",
        (
            "This feature is not available in this process or this build — for example "
            "snapshots, when the snapshot vault could not be opened.",
            "Use another tool for now (the message suggests one); `deskpilot doctor` and "
            "`deskpilot vault stats` show what is missing.",
        ),
        (
            "这个功能在当前进程或版本中还用不了——比如快照库打不开时，快照功能就不可用。",
            "暂时换用别的工具（随附的说明会给出建议）；"
            "`deskpilot doctor` 和 `deskpilot vault stats` "
            "可以看出缺了什么。",
        ),
    ),
    # -- snapshots and the vault ----------------------------------------------------------------
    ErrorCode.SNAPSHOT_NOT_FOUND: _e(
        "vault",
        (
            "The stored snapshot asked for is not there: it may have been removed when its "
            "retention ran out, or it never existed.",
            "Take a new snapshot if you need one; `deskpilot vault stats` shows what the "
            "vault holds.",
        ),
        (
            "要找的快照不存在：可能保留期满后已被清理，也可能从来就没有过。",
            "如有需要，请重新截取一张快照；`deskpilot vault stats` 会列出快照库里保存的内容。",
        ),
    ),
    ErrorCode.SNAPSHOT_TOO_LARGE: _e(
        "vault",
        (
            "The snapshot is too big to keep: larger than one snapshot may be, or more than "
            "the vault's quota has room for.",
            "Capture a smaller window, or make room: raise the vault quota on the Settings "
            "page, or let `deskpilot vault gc` clear what has expired.",
        ),
        (
            "快照太大，无法保存：超过了单张快照的上限，或者快照库的配额已经放不下了。",
            "请截取小一点的窗口，或者腾出空间：在“设置”页调高快照库配额，"
            "或用 `deskpilot vault gc` 清理过期的快照。",
        ),
    ),
    ErrorCode.VAULT_INTEGRITY_ERROR: _e(
        "vault",
        (
            "A stored snapshot, or the vault's own records, is damaged or was changed outside "
            "deskpilot, so it was not used.",
            "Nothing of the damaged item was shown. Check the disk and the data directory "
            "(`deskpilot vault stats`); if someone changed the files, treat it as a security "
            "incident.",
        ),
        (
            "某张保存的快照或快照库自身的记录已经损坏，或者在 deskpilot 之外被改动过，"
            "因此没有使用它。",
            "受损的内容没有显示出来。请检查磁盘和数据目录（`deskpilot vault stats`）；"
            "如果文件被人改动过，请按安全事件处理。",
        ),
    ),
    ErrorCode.VAULT_KEY_INVALID: _e(
        "vault",
        (
            "The key that unlocks the snapshot vault is missing, malformed, or not the one "
            "the snapshots were sealed with (for example after the keyring was reset).",
            "Snapshots sealed with another key cannot be opened with this one. Check that the "
            "system keyring (Secret Service) is unlocked and holds deskpilot's key.",
        ),
        (
            "解锁快照库的密钥缺失、格式不对，"
            "或者不是当初加密这些快照时用的那一把（比如密钥环被重置过）。",
            "用其他密钥加密的快照，无法用当前密钥打开。请确认系统密钥环（Secret Service）已解锁，"
            "并且保存着 deskpilot 的密钥。",
        ),
    ),
    # -- reading a screenshot -------------------------------------------------------------------
    ErrorCode.VISION_UNAVAILABLE: _e(
        "vision",
        (
            "deskpilot could not read a screenshot as text: the OCR engine (tesseract) or "
            "the configured vision endpoint is missing, misconfigured, or failed.",
            "For OCR, install Debian's tesseract-ocr and tesseract-ocr-eng; for an endpoint, "
            "check the DESKPILOT_VISION_* settings. An endpoint's timeouts and server errors "
            "may pass if retried.",
        ),
        (
            "deskpilot 无法把截图识别成文字：OCR 引擎（tesseract）或所配置的视觉模型接口缺失、"
            "配置有误或运行失败。",
            "使用 OCR 时，请安装 Debian 的 tesseract-ocr 和 tesseract-ocr-eng；使用接口时，"
            "请检查 DESKPILOT_VISION_* 配置。接口超时或服务器出错时，重试可能会成功。",
        ),
    ),
    # -- anything else --------------------------------------------------------------------------
    ErrorCode.INTERNAL_ERROR: _e(
        "other",
        (
            "Something went wrong inside deskpilot that it did not expect. This is a bug, "
            "not something you did.",
            "Try once more; if it happens again, note the session and the time and report it.",
        ),
        (
            "deskpilot 内部出现了意料之外的问题。这是程序缺陷，不是你操作不当。",
            "可以再试一次；如果仍然出现，请记下会话编号和时间，并报告这个问题。",
        ),
    ),
}

_UNKNOWN = _e(
    "other",
    (
        "“{code}” is not an error code of this version of deskpilot.",
        "It may come from a newer or older deskpilot, or from another program. Read the "
        "message that came with it; if deskpilot itself showed this code, please report it.",
    ),
    (
        "“{code}”不是当前版本 deskpilot 的错误码。",
        "它可能来自更新或更旧版本的 deskpilot，也可能来自其他程序。请阅读随附的说明；"
        "如果是 deskpilot 自己显示了这个错误码，请报告这个问题。",
    ),
)


def _check_locale(locale: str) -> None:
    if locale not in LOCALES:
        raise ValueError(f"unknown locale {locale!r}; expected one of {', '.join(LOCALES)}")


def _known(code: str | ErrorCode) -> ErrorCode | None:
    if isinstance(code, ErrorCode):
        return code
    try:
        return ErrorCode(code.strip().lower())
    except ValueError:
        return None


def _shown(code: str) -> str:
    """A code we do not know, safe to show: printable, cut short, never empty."""
    text = "".join(ch if ch.isprintable() else "?" for ch in code.strip())
    if len(text) > _SHOWN_MAX:
        text = text[: _SHOWN_MAX - 1] + "…"
    return text or "(empty)"


def describe(code: str | ErrorCode, locale: str) -> ErrorText:
    """``code`` (an :class:`ErrorCode` or its string value, any case) explained in ``locale``
    (``en`` or ``zh``; anything else is a :class:`ValueError`). An unknown string gets the
    "unknown error code" entry, naming the code as given (cut to 64 printable characters)."""
    _check_locale(locale)
    member = _known(code)
    if member is None:
        shown = _shown(str(code))
        words = _UNKNOWN.words(locale)
        return ErrorText(
            code=shown,
            sentence=words.sentence.format(code=shown),
            next_step=words.next_step,
            group=_UNKNOWN.group,
            known=False,
            retryable=False,
            drops_connection=False,
        )
    entry = TABLE[member]
    words = entry.words(locale)
    return ErrorText(
        code=member.value,
        sentence=words.sentence,
        next_step=words.next_step,
        group=entry.group,
        known=True,
        retryable=member.retryable,
        drops_connection=member.drops_connection,
    )


def grouped(locale: str) -> list[tuple[str, list[ErrorText]]]:
    """Every code described in ``locale``, by section in :data:`GROUPS` order and, inside a
    section, in the enum's order."""
    _check_locale(locale)
    sections: dict[str, list[ErrorText]] = {group: [] for group in GROUPS}
    for member in ErrorCode:
        text = describe(member, locale)
        sections[text.group].append(text)
    return [(group, texts) for group, texts in sections.items() if texts]


def link(code: str | ErrorCode) -> str:
    """Where the errors page explains ``code``: its row's anchor for a known code, the page's
    lookup (``?code=``) for any other string."""
    member = _known(code)
    if member is not None:
        return f"/errors#{member.value}"
    return "/errors?" + urllib.parse.urlencode({"code": str(code)[:200]})
