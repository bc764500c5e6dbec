"""Messages of the dashboard's live page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {
    "live.target": ("Show", "显示"),
    "live.target.screen": ("The whole desktop", "整个桌面"),
    "live.target.untitled": ("(untitled window)", "（无标题窗口）"),
    "live.fps": ("Frame rate", "帧率"),
    "live.fps.value": ("{n} per second", "每秒 {n} 帧"),
    "live.fps.unit": ("fps", "帧/秒"),
    "live.watch": ("Watch", "观看"),
    "live.connecting": ("Connecting…", "正在连接…"),
    "live.live": ("Live", "实时"),
    "live.reconnecting": ("Connection lost; reconnecting…", "连接已断开，正在重新连接…"),
    "live.figures": ("frame", "帧"),
    "live.latency": ("delay", "延迟"),
    "live.frame.alt": ("The desktop as it is now", "桌面的实时画面"),
    "live.redaction.on": (
        "Password fields are painted out, as in stored images.",
        "密码输入框已涂灰遮盖，与存储的截图一致。",
    ),
    "live.redaction.off": (
        "Password fields are shown: “{setting}” is off in Settings.",
        "密码输入框未被遮盖：设置中的“{setting}”已关闭。",
    ),
    "live.legend.pointer": ("the pointer", "鼠标指针"),
    "live.legend.agent": (
        "what an agent acted on (stays 3 s)",
        "智能体刚操作过的元素（保留 3 秒）",
    ),
    "live.legend.agent_window": (
        "the window an agent is acting in now",
        "智能体正在操作的窗口",
    ),
    "live.legend.painted": (
        "painted out: a password field, or a window not read yet",
        "已遮盖：密码输入框，或尚未读取的窗口",
    ),
    "live.ended": (
        "The live view stopped: you were logged out or may no longer watch from this "
        "machine. Reload the page to try again.",
        "实时画面已停止：你已退出登录，或不再允许从这台机器观看。请刷新页面重试。",
    ),
    "live.problem.target_not_found": (
        "That window is gone. Choose another one, or the whole desktop.",
        "该窗口已关闭。请选择其他窗口，或查看整个桌面。",
    ),
    "live.problem.capture_failed": (
        "The window is minimised or off screen; frames resume when it is shown again.",
        "该窗口已最小化或不在屏幕上；窗口重新显示后画面会自动恢复。",
    ),
    "live.problem.native_host_unavailable": (
        "deskpilot's host process is not available; trying again every second.",
        "deskpilot 的宿主进程不可用；每秒重试一次。",
    ),
    "live.problem.environment_unavailable": (
        "There is no desktop to show: the dashboard was started without a display.",
        "没有可显示的桌面：面板启动时没有可用的显示器。",
    ),
    "live.problem.sensitive_input_blocked": (
        "That window belongs to a password manager or login prompt, which is never shown.",
        "该窗口属于密码管理器或登录提示，永远不会被显示。",
    ),
    "live.problem.no_windows_available": (
        "There are no windows on the desktop.",
        "桌面上没有任何窗口。",
    ),
    "live.problem.other": (
        "A frame could not be taken ({code}); trying again.",
        "无法获取画面（{code}）；正在重试。",
    ),
}
