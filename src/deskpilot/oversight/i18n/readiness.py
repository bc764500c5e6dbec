"""Messages of the readiness page, the halt banner and Unhalt: key -> (English, Chinese).

The halt and takeover banners appear on every page; their words live here because this page
owns them (``oversight/banner.py``)."""

MESSAGES: dict[str, tuple[str, str]] = {
    # -- the page
    "readiness.title": ("Readiness", "就绪状态"),
    "readiness.intro": (
        "The same checks as `deskpilot doctor`: the host, its permissions and backends, how "
        "fast it observes and acts, the kill switch and who holds the desktop.",
        "与 `deskpilot doctor` 相同的检查：宿主进程、权限与后端、观测和操作的速度、紧急停止"
        "快捷键，以及当前由谁占用桌面。",
    ),
    "readiness.run": ("Run checks", "运行检查"),
    "readiness.run_hint": (
        "Starts the host and measures latencies on a small “deskpilot doctor” dialog that "
        "opens and closes by itself; nothing in your apps is touched.",
        "会启动宿主进程，并在一个自动打开又关闭的小对话框“deskpilot doctor”上测量延迟；"
        "不会触碰你的任何应用。",
    ),
    "readiness.hint": ("{what}: {how}", "{what}：{how}"),
    "readiness.run_host": ("Check the host only", "仅检查宿主"),
    "readiness.run_host_hint": (
        "Read-only: starts the host and reads its capabilities; no window, no action, no "
        "latencies.",
        "只读：启动宿主进程并读取其能力；不打开窗口、不执行操作，也不测量延迟。",
    ),
    "readiness.running": (
        "Checks running since {since}…",
        "检查进行中（开始于 {since}）…",
    ),
    "readiness.no_report": (
        "No checks have run since this dashboard started. Press “Run checks”.",
        "自本面板启动以来尚未运行过检查。请点击“运行检查”。",
    ),
    "readiness.report_time": (
        "Report of {when} ({mode}, took {ms} ms).",
        "报告生成于 {when}（{mode}，耗时 {ms} 毫秒）。",
    ),
    "readiness.mode.full": ("full check", "完整检查"),
    "readiness.mode.verify_host": ("host only", "仅宿主"),
    "readiness.failed": (
        "The checks could not finish: {error}",
        "检查未能完成：{error}",
    ),
    "readiness.timed_out": (
        "The checks took longer than {seconds} s and were stopped.",
        "检查耗时超过 {seconds} 秒，已停止。",
    ),
    "readiness.ready": (
        "Ready: agents can observe and act on this desktop.",
        "就绪：智能体可以观测并操作此桌面。",
    ),
    "readiness.ready_but_halted": (
        "The desktop itself is ready, but the halt above refuses every agent action until you "
        "lift it.",
        "桌面本身已就绪，但上方的停止状态会拒绝智能体的所有操作，直到你解除它。",
    ),
    "readiness.not_ready": ("Not ready", "尚未就绪"),
    "readiness.diagnostic": ("Diagnostic code", "诊断码"),
    "readiness.error": ("Error", "错误"),
    "readiness.kill_switch_blocks": (
        "The kill switch cannot be armed on this display, so you would have no key to stop an "
        "agent: the desktop does not count as ready.",
        "此显示器上无法启用紧急停止快捷键，你将无法用按键停止智能体，因此桌面不算就绪。",
    ),
    # -- sections
    "readiness.section.host": ("Host", "宿主进程"),
    "readiness.section.permissions": ("Permissions", "权限"),
    "readiness.section.backends": ("Backends", "后端"),
    "readiness.section.latencies": ("Latencies", "延迟"),
    "readiness.section.supervisor": ("Supervisor", "监管进程"),
    "readiness.section.vault": ("Snapshot vault", "快照保险库"),
    "readiness.section.kill_switch": ("Kill switch", "紧急停止"),
    "readiness.section.halts": ("Halts", "停止记录"),
    "readiness.section.lease": ("Desktop lease", "桌面占用"),
    "readiness.section.takeover": ("Takeover hold", "接管状态"),
    "readiness.live_note": (
        "Read now, at every page load.",
        "每次加载页面时实时读取。",
    ),
    # -- rows: host
    "readiness.row.trusted": ("Host trusted", "宿主可信"),
    "readiness.row.available": ("Available", "可用"),
    "readiness.row.host_version": ("Host version", "宿主版本"),
    "readiness.row.protocol_version": ("Protocol version", "协议版本"),
    "readiness.row.platform": ("Platform", "平台"),
    "readiness.row.session_type": ("Session type", "会话类型"),
    "readiness.row.start_ms": ("Host start", "宿主启动耗时"),
    "readiness.row.unavailable": ("Unavailable because", "不可用原因"),
    "readiness.row.artifact": ("Installed host", "已安装的宿主"),
    "readiness.row.screen": ("Screen", "屏幕"),
    "readiness.row.accessibility": ("Accessibility", "辅助功能"),
    "readiness.row.input": ("Input", "输入"),
    "readiness.row.observe": ("Observe", "观测"),
    "readiness.row.action": ("Action", "操作"),
    "readiness.row.post_action": ("Observe after the action", "操作后观测"),
    "readiness.row.sample": ("Measured on", "测量对象"),
    "readiness.row.state": ("State", "状态"),
    "readiness.row.restarts": ("Restart budget", "重启额度"),
    "readiness.row.key": ("Key storage", "密钥存放"),
    "readiness.row.chord": ("Chord", "快捷键"),
    "readiness.row.halt_now": ("Now", "当前"),
    "readiness.row.display": ("Display", "显示器"),
    "readiness.row.holder": ("Held by", "占用者"),
    "readiness.row.lane": ("Sessions’ lane", "会话通道"),
    "readiness.row.hold": ("Hold", "接管"),
    # -- values
    "readiness.yes": ("yes", "是"),
    "readiness.no": ("no", "否"),
    "readiness.ms": ("{ms} ms", "{ms} 毫秒"),
    "readiness.not_measured": ("not measured", "未测量"),
    "readiness.sample_skipped": ("not measured: {why}", "未测量：{why}"),
    "readiness.sample_error": ("the sample failed: {code}", "测量样本失败：{code}"),
    "readiness.sample_on": (
        "{app} ({source}, {elements} elements)",
        "{app}（{source}，{elements} 个元素）",
    ),
    "readiness.restarts_value": (
        "{n} per session; used up by: {sessions}",
        "每个会话 {n} 次；已用完的会话：{sessions}",
    ),
    "readiness.artifact_value": (
        "{mode} ({files} files checked)",
        "{mode}（已校验 {files} 个文件）",
    ),
    "readiness.perm.granted": ("granted", "已授权"),
    "readiness.perm.denied": ("denied", "未授权"),
    "readiness.perm.restricted": ("restricted by the system", "受系统限制"),
    "readiness.perm.unsupported": ("not available here", "当前不可用"),
    "readiness.perm.not_determined": ("not asked yet", "待授权"),
    "readiness.backend.none": ("none", "无"),
    "readiness.ks.armed": ("armed", "已启用"),
    "readiness.ks.free": (
        "free: a deskpilot server started now arms it",
        "空闲：现在启动的 deskpilot 服务会启用它",
    ),
    "readiness.ks.watching": (
        "armed by deskpilot process pid {pid}: a press stops every deskpilot process on this "
        "display",
        "已由 deskpilot 进程 pid {pid} 启用：按下后会停止此显示器上的所有 deskpilot 进程",
    ),
    "readiness.ks.unavailable": ("cannot be armed: {cause}", "无法启用：{cause}"),
    "readiness.ks.off": ("off: the killSwitch setting is empty", "已关闭：killSwitch 设置为空"),
    "readiness.ks.unknown": ("unknown: {cause}", "未知：{cause}"),
    "readiness.ks.not_probed": (
        "not probed yet (run the checks)",
        "尚未探测（请运行检查）",
    ),
    "readiness.halt.none": ("not halted", "未停止"),
    "readiness.halt.row": (
        "{when}: {cause}; lifted {lifted}",
        "{when}：{cause}；解除于 {lifted}",
    ),
    "readiness.halt.row_active": ("{when}: {cause}; still in force", "{when}：{cause}；仍然有效"),
    "readiness.halt.lifted_by": ("{when} by {by}", "{when}，由 {by} 解除"),
    "readiness.halt.no_history": ("the kill switch was never pressed", "紧急停止从未被按下"),
    "readiness.lease.free": ("free", "空闲"),
    "readiness.lease.none": ("no X display: nothing to share", "没有 X 显示器：无需共享"),
    "readiness.lease.held": (
        "deskpilot process pid {pid} since {since}{acting}",
        "deskpilot 进程 pid {pid}，自 {since} 起{acting}",
    ),
    "readiness.lease.acting": (", acting now", "，正在执行操作"),
    "readiness.lease.unknown": ("cannot tell: {cause}", "无法判断：{cause}"),
    "readiness.lane.free": ("no session holds it", "没有会话占用"),
    "readiness.lane.held": (
        "session {session} (agent {agent}) since {since}",
        "会话 {session}（智能体 {agent}），自 {since} 起",
    ),
    "readiness.hold.none": ("nobody has taken over", "无人接管"),
    "readiness.hold.held": (
        "{by} holds the desktop since {since} (session {session}); every agent action is "
        "refused until they hand back",
        "{by} 自 {since} 起接管桌面（会话 {session}）；交还之前智能体的所有操作都会被拒绝",
    ),
    # -- the halt banner and Unhalt
    "readiness.halt.kill_switch": (
        "Halted: the kill switch ({chord}) was pressed at {when}. Every session was stopped and "
        "agents may not act until you lift the halt.",
        "已停止：紧急停止快捷键（{chord}）于 {when} 被按下。所有会话都已停止，解除之前智能体"
        "不能执行任何操作。",
    ),
    "readiness.halt.other": (
        "Halted at {when} ({cause}). Agents may not act until you lift the halt.",
        "已于 {when} 停止（{cause}）。解除之前智能体不能执行任何操作。",
    ),
    "readiness.halt.cause.kill_switch": ("the kill switch was pressed", "按下了紧急停止快捷键"),
    "readiness.unhalt": ("Unhalt", "解除停止"),
    "readiness.unhalted": (
        "Halt lifted: agents may act again. Sessions the kill switch stopped stay stopped; an "
        "agent starts a new one.",
        "已解除停止：智能体可以再次操作。被紧急停止终止的会话仍保持终止状态，智能体需要新建会话。",
    ),
    "readiness.not_halted": ("No halt is engaged.", "当前没有生效的停止。"),
    "readiness.takeover.banner": (
        "You hold the desktop ({by}, since {when}): every agent action is refused until you "
        "hand back on the session’s page.",
        "你正在接管桌面（{by}，自 {when} 起）：在会话页面交还之前，智能体的所有操作都会被拒绝。",
    ),
    "readiness.takeover.open": ("Open the session", "打开该会话"),
    "readiness.action_failed": (
        "That did not work: {error}",
        "操作失败：{error}",
    ),
    "readiness.offline": (
        "Lost the connection to the dashboard; it reconnects by itself.",
        "与面板的连接已断开，正在自动重连。",
    ),
}
