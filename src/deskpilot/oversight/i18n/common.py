"""Messages shared by every page (navigation, login, refusals):
key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {
    "app.title": ("deskpilot", "deskpilot"),
    "nav.live": ("Live view", "实时画面"),
    "nav.readiness": ("Readiness", "就绪状态"),
    "nav.sessions": ("Sessions", "会话"),
    "nav.confirmations": ("Confirmations", "确认请求"),
    "nav.settings": ("Settings", "设置"),
    "nav.errors": ("Error codes", "错误码"),
    "lang.switch": ("中文", "English"),
    "lang.label": ("Language", "语言"),
    "login.used": (
        "This login link was already used or has expired. Run `deskpilot ui` again for a new one.",
        "此登录链接已被使用或已过期。请重新运行 `deskpilot ui` 获取新链接。",
    ),
    "login.needed": (
        "Open the one-time login link that `deskpilot ui` printed.",
        "请打开 `deskpilot ui` 打印的一次性登录链接。",
    ),
    "denied.title": ("Not allowed", "不允许"),
    "error.title.not_found": ("Not found", "未找到"),
    "error.title.bad_request": ("Not understood", "无法理解的请求"),
    "error.title.not_possible": ("Not possible", "无法执行"),
    "login.title": ("Login link spent", "登录链接已失效"),
    "denied.csrf": (
        "The form was stale or came from another site; reload the page and try again.",
        "表单已过期或来自其他站点；请刷新页面后重试。",
    ),
    "denied.remote": (
        "This dashboard is reached from another machine and the remote setting "
        "“{capability}” is off.",
        "当前从其他机器访问本面板，而远程设置“{capability}”未开启。",
    ),
    "denied.local_only": (
        "Only a browser on this machine may do that.",
        "只有本机上的浏览器可以执行此操作。",
    ),
    "common.none": ("none", "无"),
}
