"""Messages of the dashboard's errors page (its headings, columns and flags): key -> (English,
Chinese). What each code means lives in ``oversight/error_table.py``, one entry per code."""

MESSAGES: dict[str, tuple[str, str]] = {
    "errors.title": ("Error codes", "错误码"),
    "errors.intro": (
        "Every error code deskpilot reports — in a session's timeline, to an agent, or on "
        "this dashboard — with what it means and what to do next. {count} codes in all.",
        "deskpilot 报告的每一个错误码（无论出现在会话时间线里、发给智能体的结果里，还是本面板上），"
        "以及它的含义和下一步该怎么做。共 {count} 个。",
    ),
    "errors.link_hint": (
        "Each code has its own address: /errors#focus_mismatch, for example.",
        "每个错误码都有自己的链接地址，例如 /errors#focus_mismatch。",
    ),
    "errors.col.code": ("Code", "错误码"),
    "errors.col.sentence": ("What happened", "发生了什么"),
    "errors.col.next": ("What to do next", "下一步怎么做"),
    "errors.col.flags": ("Notes", "备注"),
    "errors.flag.retryable": ("retrying may help", "重试可能有效"),
    "errors.flag.drops": ("ends the host connection", "会断开与宿主的连接"),
    "errors.asked": ("The code you asked about", "你查询的错误码"),
    "errors.asked.row": ("See it in the table", "在表中查看"),
    "errors.group.environment": (
        "Environment, permissions and capabilities",
        "运行环境、权限与能力",
    ),
    "errors.group.host": ("The host process and its connection", "宿主进程及其连接"),
    "errors.group.freshness": (
        "What the agent saw, and its targets",
        "智能体看到的画面与操作目标",
    ),
    "errors.group.actions": ("Actions, policy and approvals", "操作、策略与审批"),
    "errors.group.sessions": ("Sessions, tasks and budgets", "会话、任务与预算"),
    "errors.group.vault": ("Snapshots and the vault", "快照与快照库"),
    "errors.group.vision": ("Reading a screenshot", "识别截图"),
    "errors.group.other": ("Anything else", "其他"),
}
