"""Messages of the confirmations page and of the confirmation notifications every page shows:
key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {
    "confirmations.title": ("Confirmations", "确认请求"),
    "confirmations.intro.off": (
        "“{setting}” is set to “{value}” on the Settings page, so only app launches and shell "
        "commands rated L3 or higher wait here for you; other actions do not ask.",
        "设置页面上的“{setting}”为“{value}”，因此只有评级为 L3 及以上的应用启动和 shell "
        "命令会在这里等待你确认；其他操作不会询问。",
    ),
    "confirmations.intro.level": (
        "App launches and shell commands rated L3 or higher wait here for you, and so does any "
        "other action rated above “{setting}”, which the Settings page sets to “{value}”.",
        "评级为 L3 及以上的应用启动和 shell 命令会在这里等待你确认；其他操作在风险高于"
        "“{setting}”时也会等待，该项在设置页面上为“{value}”。",
    ),
    "confirmations.intro.settings": ("Change it in Settings", "在设置中更改"),
    "confirmations.intro.answers": (
        "Each answer counts once: Approve lets that one action run one time; Deny refuses it "
        "and the agent is told so. The same as `deskpilot confirm`.",
        "每个回答只生效一次：批准只允许该操作执行一次；拒绝则不执行，并告知智能体。与 "
        "`deskpilot confirm` 相同。",
    ),
    "confirmations.pending": ("Waiting for you", "等待你确认"),
    "confirmations.none_pending": ("Nothing waits for a confirmation.", "没有等待确认的操作。"),
    "confirmations.recent": ("Recently answered", "最近的回答"),
    "confirmations.none_recent": (
        "No confirmation was answered yet.",
        "还没有回答过任何确认请求。",
    ),
    "confirmations.col.what": ("What", "内容"),
    "confirmations.col.where": ("Where", "位置"),
    "confirmations.col.risk": ("Risk", "风险"),
    "confirmations.col.why": ("Why", "原因"),
    "confirmations.col.expires": ("Expires", "过期时间"),
    "confirmations.col.answer": ("Answer", "回答"),
    "confirmations.col.outcome": ("Outcome", "结果"),
    "confirmations.col.when": ("When", "时间"),
    "confirmations.col.session": ("Session", "会话"),
    "confirmations.approve": ("Approve", "批准"),
    "confirmations.deny": ("Deny", "拒绝"),
    "confirmations.left": ("{seconds} s left", "剩余 {seconds} 秒"),
    "confirmations.expired_now": ("expired", "已过期"),
    "confirmations.expires_at": ("at {when}", "于 {when}"),
    "confirmations.where.window": ("window {id}", "窗口 {id}"),
    "confirmations.where.none": (
        "no window: a command or an app launch",
        "不针对窗口：命令或启动应用",
    ),
    "confirmations.where.focused": ("the focused window", "当前焦点窗口"),
    "confirmations.session": ("session {id}", "会话 {id}"),
    "confirmations.notify": (
        "Waiting for your confirmation ({risk}): {summary}",
        "等待你的确认（{risk}）：{summary}",
    ),
    "confirmations.approved": (
        "Approved: that action runs once.",
        "已批准：该操作将执行一次。",
    ),
    "confirmations.denied": (
        "Denied: the action does not run and the agent is told.",
        "已拒绝：该操作不会执行，智能体会收到通知。",
    ),
    "confirmations.already": (
        "This confirmation was already answered ({status}); each one is answered once.",
        "此确认请求已经被回答（{status}）；每个请求只能回答一次。",
    ),
    "confirmations.expired": (
        "This confirmation expired; the action did not run. The agent may ask again.",
        "此确认请求已过期，操作没有执行。智能体可以再次请求。",
    ),
    "confirmations.unknown": ("There is no confirmation {id}.", "不存在确认请求 {id}。"),
    "confirmations.status.pending": ("waiting", "等待中"),
    "confirmations.status.approved": ("approved", "已批准"),
    "confirmations.status.consumed": ("approved and run", "已批准并执行"),
    "confirmations.status.denied": ("denied", "已拒绝"),
    "confirmations.status.expired": ("expired", "已过期"),
    "confirmations.by": ("by {by}", "由 {by}"),
    "confirmations.by.dashboard": ("the dashboard", "面板"),
    "confirmations.by.cli": ("`deskpilot confirm`", "`deskpilot confirm`"),
    "confirmations.by.timeout": ("nobody in time", "超时无人回答"),
    "confirmations.by.session_ended": ("the session ended", "会话已结束"),
    "confirmations.by.abandoned": ("the agent stopped waiting", "智能体停止了等待"),
    "confirmations.by.session_paused": ("the session was paused", "会话已暂停"),
    "confirmations.by.session_canceled": ("the session was stopped", "会话已停止"),
    "confirmations.by.session_completed": ("the session ended", "会话已结束"),
    "confirmations.by.session_failed": ("the session failed", "会话失败"),
    "confirmations.by.session_handoff_required": ("the person took over", "用户接管了桌面"),
    "confirmations.reason.confirmation_required": (
        "rated above your “Ask me before actions rated above” setting",
        "风险高于你的“以下风险等级以上的操作需要我确认”设置",
    ),
    "confirmations.reason.above_setting": (
        "rated above “{setting}” ({value})",
        "风险高于“{setting}”（{value}）",
    ),
    "confirmations.reason.shell_confirmation_required": (
        "a command rated L3 or higher always asks you",
        "L3 及以上的命令总是需要你确认",
    ),
    "confirmations.reason.launch_confirmation_required": (
        "starting this app is rated L3 or higher",
        "启动此应用的风险为 L3 及以上",
    ),
    "confirmations.reason.user_presence_supervised": (
        "the task runs supervised: every action asks you",
        "此任务在监督模式下运行：每个操作都需要你确认",
    ),
    "confirmations.reason.user_presence_required": (
        "the task requires you present for actions rated L2 or higher",
        "此任务要求 L2 及以上的操作须有你在场确认",
    ),
    "confirmations.reason.other": ("policy reason “{code}”", "策略原因“{code}”"),
}
