"""Messages of the dashboard's settings page: key -> (English, Chinese).

Each setting has three: ``settings.f.<name>.label``, ``.help`` (what it does, in the person's
terms) and ``.who`` (which part of deskpilot reads it, and when); a checkbox inside a group is
``settings.f.<group>.<child>``. tests/web/test_settings.py fails when a control of the form has
no label, help or reader line here.
"""

MESSAGES: dict[str, tuple[str, str]] = {
    # ------------------------------------------------------------------ the page
    "settings.title": ("Settings", "设置"),
    "settings.intro": (
        "Stored in this data directory's database and read by every deskpilot process that "
        "acts (deskpilot serve, run, agent): a change applies without restarting anything.",
        "设置保存在当前数据目录的数据库中，所有执行操作的 deskpilot 进程（deskpilot serve、run、"
        "agent）都会读取：修改后无需重启任何进程即可生效。",
    ),
    "settings.save": ("Save", "保存"),
    "settings.reset": ("Reset to default", "恢复默认值"),
    "settings.default": ("Default: {value}", "默认值：{value}"),
    "settings.on": ("on", "开"),
    "settings.off": ("off", "关"),
    "settings.saved": ("Saved: {names}.", "已保存：{names}。"),
    "settings.nothing_changed": ("Nothing changed.", "没有任何更改。"),
    "settings.reset_done": ("{name} is back to its default.", "{name} 已恢复为默认值。"),
    "settings.refused": (
        "Nothing was saved: {count} value(s) need fixing, each marked below with the reason.",
        "未保存任何内容：有 {count} 项需要修改，原因已标注在对应字段下方。",
    ),
    "settings.field_saved": ("saved", "已保存"),
    "settings.remote_note": (
        "You are viewing the settings from another machine: only a browser on this machine "
        "can change them.",
        "你正在从其他机器查看设置：只有本机上的浏览器才能修改设置。",
    ),
    "settings.section.agents": ("Agents", "智能体"),
    "settings.section.stopping": ("Stopping", "停止"),
    "settings.section.privacy": ("Privacy and recording", "隐私与记录"),
    "settings.section.dashboard": ("Dashboard", "控制面板"),
    "settings.section.other": ("Other", "其他"),
    "settings.reader": ("Read by: {who}", "读取方：{who}"),
    "settings.sep.item": (", ", "，"),
    "settings.sep.value": (": ", "："),
    # ------------------------------------------------------------------ refusals
    "settings.error.checkbox": ("Not a valid on/off value.", "不是有效的开/关值。"),
    "settings.error.integer": (
        "Enter a whole number from {min} to {max}.",
        "请输入 {min} 到 {max} 之间的整数。",
    ),
    "settings.error.range": (
        "Must be between {min} and {max}.",
        "必须在 {min} 到 {max} 之间。",
    ),
    "settings.error.mib": (
        "Enter a whole number of MiB, from {min} to {max}.",
        "请输入以 MiB 为单位的整数，范围 {min} 到 {max}。",
    ),
    "settings.error.quota_min": (
        "The quota must be at least {min} MiB.",
        "配额至少为 {min} MiB。",
    ),
    "settings.error.choice": ("Choose one of: {choices}.", "请从以下选项中选择：{choices}。"),
    "settings.error.chord_shape": (
        "A chord is modifiers and one key joined by “+”, e.g. ctrl+shift+Escape.",
        "快捷键由修饰键和一个按键用“+”连接而成，例如 ctrl+shift+Escape。",
    ),
    "settings.error.chord_unknown_modifier": (
        "Unknown modifier “{name}” (known: {known}).",
        "未知的修饰键“{name}”（可用：{known}）。",
    ),
    "settings.error.chord_unknown_key": (
        "Unknown key “{name}”: use a letter, a digit, F1–F12, Escape, Return, Space, Tab, "
        "Delete, BackSpace, Pause, Home, End, or an X key name such as slash.",
        "未知的按键“{name}”：请使用字母、数字、F1–F12、Escape、Return、Space、Tab、Delete、"
        "BackSpace、Pause、Home、End，或 X 按键名（如 slash）。",
    ),
    "settings.error.chord_no_key": (
        "There is no key after the modifiers: add one key, e.g. ctrl+shift+Escape.",
        "修饰键之后缺少按键：请再加一个按键，例如 ctrl+shift+Escape。",
    ),
    "settings.error.chord_two_keys": (
        "A chord has exactly one key, after its modifiers: “{name}” is a key, not a modifier.",
        "快捷键只能有一个按键，且放在修饰键之后：“{name}”是按键，不是修饰键。",
    ),
    "settings.error.chord_repeated_modifier": (
        "The modifier {name} is given twice.",
        "修饰键 {name} 重复出现了。",
    ),
    "settings.error.chord_bare_key": (
        "“{name}” alone cannot be the kill switch: it needs at least one modifier (ctrl, alt, "
        "shift or super), or every press of that key would be taken from you and halt "
        "computer use.",
        "“{name}”不能单独作为紧急停止快捷键：至少需要一个修饰键（ctrl、alt、shift 或 super），"
        "否则你每次按下这个键都会被拦截，并停止电脑操作。",
    ),
    "settings.error.chord_shift_printable": (
        "shift+{name} types a character: as the kill switch it would take that character "
        "from you every time you type it. Add ctrl, alt or super.",
        "shift+{name} 会输入一个字符：作为紧急停止快捷键，它会在你每次输入该字符时将其拦截。"
        "请加上 ctrl、alt 或 super。",
    ),
    "settings.error.app_name": (
        "Each app name is at most {max} characters long, without control characters.",
        "每个应用名最多 {max} 个字符，且不能包含控制字符。",
    ),
    "settings.error.apps_count": ("At most {max} apps.", "最多 {max} 个应用。"),
    "settings.error.model": ("Refused: {reason}", "被拒绝：{reason}"),
    # ------------------------------------------------------------------ the fields
    "settings.f.enabled.label": ("Computer use enabled", "启用电脑操作"),
    "settings.f.enabled.help": (
        "Off: every agent action — a click, typing, launching an app, a shell command — is "
        "refused with computer_disabled. Observing still works.",
        "关闭后，智能体的每个操作（点击、输入、启动应用、shell 命令）都会以 computer_disabled "
        "被拒绝。观察仍然可用。",
    ),
    "settings.f.enabled.who": (
        "the kernel's broker, before every action, in every deskpilot process (within 1 s)",
        "内核的 broker，在每个操作之前读取，所有 deskpilot 进程均生效（1 秒内）",
    ),
    "settings.f.environments.label": ("Desktops agents may act on", "智能体可以操作的桌面"),
    "settings.f.environments.help": (
        "An action on a kind of desktop that is off is refused with computer_disabled "
        "(environment_disabled); observing it still works.",
        "在已关闭类型的桌面上执行操作会以 computer_disabled（environment_disabled）被拒绝；"
        "观察仍然可用。",
    ),
    "settings.f.environments.who": (
        "the kernel's broker, before every action (which kind a display is: the state file "
        "deskpilot desktop up writes)",
        "内核的 broker，在每个操作之前读取（显示器属于哪种类型，由 deskpilot desktop up 写入的"
        "状态文件判断）",
    ),
    "settings.f.environments.myDesktop.label": ("My desktop", "我的桌面"),
    "settings.f.environments.myDesktop.help": (
        "Your own display: any DISPLAY that is not a private desktop deskpilot started.",
        "你自己的显示器：任何不是由 deskpilot 启动的私有桌面的 DISPLAY。",
    ),
    "settings.f.environments.privateDesktop.label": ("Private virtual desktops", "私有虚拟桌面"),
    "settings.f.environments.privateDesktop.help": (
        "A headless desktop deskpilot started (deskpilot desktop up, scripts/run, the tests).",
        "由 deskpilot 启动的无头桌面（deskpilot desktop up、scripts/run、测试）。",
    ),
    "settings.f.allowedApps.label": ("Allowed apps", "允许的应用"),
    "settings.f.allowedApps.help": (
        "One app per line (executable, desktop id or window class; any case). When the list "
        "is not empty, actions on any other app are blocked by policy. Empty: every app.",
        "每行一个应用（可执行文件名、desktop id 或窗口类名，不区分大小写）。列表不为空时，"
        "对其他应用的操作会被策略拦截。留空表示允许所有应用。",
    ),
    "settings.f.allowedApps.who": (
        "the kernel's policy, on every action and app launch (besides a task's own list)",
        "内核的策略，在每个操作和每次启动应用时读取（与任务自身的列表同时生效）",
    ),
    "settings.f.requireConfirmationAbove.label": (
        "Ask me before actions rated above",
        "以下风险等级以上的操作需要我确认",
    ),
    "settings.f.requireConfirmationAbove.help": (
        "Actions rated strictly above this level wait for your one-time confirmation (on the "
        "Confirmations page or with deskpilot confirm). L2 means L3 and L4 need one.",
        "风险等级严格高于此级别的操作会等待你的一次性确认（在“确认请求”页面或使用 deskpilot "
        "confirm）。选择 L2 表示 L3 和 L4 需要确认。",
    ),
    "settings.f.requireConfirmationAbove.who": (
        "the kernel's policy, when it rates each action",
        "内核的策略，在为每个操作评定风险时读取",
    ),
    "settings.choice.off": ("never ask", "从不询问"),
    "settings.choice.L0": ("L0 — ask for L1 and above", "L0——L1 及以上需要确认"),
    "settings.choice.L1": ("L1 — ask for L2 and above", "L1——L2 及以上需要确认"),
    "settings.choice.L2": ("L2 — ask for L3 and L4", "L2——L3 和 L4 需要确认"),
    "settings.choice.L3": ("L3 — ask for L4 only", "L3——仅 L4 需要确认"),
    "settings.f.confirmationTimeoutSeconds.label": (
        "Confirmation timeout (seconds)",
        "确认等待时间（秒）",
    ),
    "settings.f.confirmationTimeoutSeconds.help": (
        "How long a waiting confirmation lasts before it counts as denied.",
        "等待确认的操作超过这个时间后视为被拒绝。",
    ),
    "settings.f.confirmationTimeoutSeconds.who": (
        "the kernel, when an action starts waiting for you",
        "内核，在操作开始等待你确认时读取",
    ),
    "settings.f.allowExternalReadback.label": (
        "Allow external readback checks",
        "允许外部回读校验",
    ),
    "settings.f.allowExternalReadback.help": (
        "Lets a task's success criteria run a command the caller names (external_readback, "
        "run without a shell). Off: start_task refuses such criteria.",
        "允许任务的成功判据运行调用方指定的命令（external_readback，不经过 shell 执行）。"
        "关闭时，start_task 会拒绝这类判据。",
    ),
    "settings.f.allowExternalReadback.who": (
        "the runtime's verification, when a task starts and when it checks",
        "运行时的校验模块，在任务开始和执行校验时读取",
    ),
    "settings.f.killSwitch.label": ("Kill-switch chord", "紧急停止快捷键"),
    "settings.f.killSwitch.help": (
        "Pressing it stops every agent session and halts agents until you unhalt. Modifiers "
        "(ctrl, shift, alt, super) and one key joined by +, e.g. ctrl+shift+Escape; empty "
        "disarms it.",
        "按下后会停止所有智能体会话，并在你解除之前禁止智能体操作。格式为修饰键（ctrl、shift、"
        "alt、super）加一个按键，用 + 连接，例如 ctrl+shift+Escape；留空表示不启用。",
    ),
    "settings.f.killSwitch.who": (
        "every running deskpilot process, which grabs it on the X display and re-arms within "
        "about half a second of a change",
        "每个正在运行的 deskpilot 进程，它会在 X 显示器上注册该快捷键，修改后约半秒内重新注册",
    ),
    "settings.f.escapeCancelsAction.label": (
        "Escape cancels the current action",
        "按 Esc 取消当前操作",
    ),
    "settings.f.escapeCancelsAction.help": (
        "Your physical Escape key during an action ends that one action and hands the "
        "session to you. The agent's own Escape never counts.",
        "在操作进行中按下实体 Esc 键会结束这一个操作，并把会话交给你。智能体自己发送的 Esc 不算。",
    ),
    "settings.f.escapeCancelsAction.who": (
        "the kill switch's listener, when you press Escape",
        "紧急停止的监听器，在你按下 Esc 时读取",
    ),
    "settings.f.redactSensitiveContent.label": ("Paint out password fields", "遮盖密码字段"),
    "settings.f.redactSensitiveContent.help": (
        "Secure fields such as passwords are painted grey in the image the model sees and in "
        "every stored snapshot and evidence frame. Off: images show what the screen shows.",
        "密码等安全字段会在模型看到的图像以及每张保存的快照和证据帧中涂成灰色。关闭后，"
        "图像会如实显示屏幕上的内容。",
    ),
    "settings.f.redactSensitiveContent.who": (
        "the runtime (the model's image) and the vault (each stored image), per image",
        "运行时（模型看到的图像）和快照库（每张保存的图像），逐张读取",
    ),
    "settings.f.fullRecordingEnabled.label": ("Record evidence frames", "记录证据帧"),
    "settings.f.fullRecordingEnabled.help": (
        "On: the window just before and just after every agent action is stored, encrypted, "
        "in the vault (each frame kept 24 h). Off: no frames are recorded.",
        "开启后，每个智能体操作之前和之后的窗口画面都会加密保存到快照库（每帧保留 24 小时）。"
        "关闭后不记录任何画面。",
    ),
    "settings.f.fullRecordingEnabled.who": (
        "the runtime, before each action, and the vault, when it stores a frame",
        "运行时在每个操作之前读取，快照库在保存画面时读取",
    ),
    "settings.f.evidenceRetentionDays.label": ("Keep snapshots (days)", "快照保留天数"),
    "settings.f.evidenceRetentionDays.help": (
        "App snapshots are deleted this many days after they were taken (0: at the next "
        "maintenance run). Evidence frames always go after 24 h.",
        "应用快照在拍摄后经过这么多天会被删除（0 表示在下一次维护时删除）。证据帧总是在 "
        "24 小时后删除。",
    ),
    "settings.f.evidenceRetentionDays.who": (
        "vault maintenance in deskpilot serve (at start, then every 6 h)",
        "deskpilot serve 中的快照库维护任务（启动时执行一次，之后每 6 小时一次）",
    ),
    "settings.f.vaultQuotaBytes.label": ("Vault disk quota (MiB)", "快照库磁盘配额（MiB）"),
    "settings.f.vaultQuotaBytes.help": (
        "The encrypted snapshots may take at most this much disk; above it the least "
        "recently used are deleted. At least 16 MiB.",
        "加密快照最多占用这么多磁盘空间；超出时会删除最久未使用的快照。至少 16 MiB。",
    ),
    "settings.f.vaultQuotaBytes.who": (
        "the vault, after every stored image, and its maintenance",
        "快照库，在每次保存图像后以及维护时读取",
    ),
    "settings.f.remote.label": ("Browsers on other machines", "其他机器上的浏览器"),
    "settings.f.remote.help": (
        "What a dashboard opened from another machine may do (deskpilot ui --bind ADDRESS). "
        "Settings and Unhalt are only ever changed from this machine.",
        "从其他机器打开的控制面板可以做什么（deskpilot ui --bind ADDRESS）。设置和解除停止"
        "只能在本机上操作。",
    ),
    "settings.f.remote.who": (
        "the dashboard, on every request from another machine",
        "控制面板，在每个来自其他机器的请求中读取",
    ),
    "settings.f.remote.observe.label": ("Watch", "查看"),
    "settings.f.remote.observe.help": (
        "The live view, sessions and timelines, readiness and the list of confirmations.",
        "实时画面、会话与时间线、就绪状态以及确认请求列表。",
    ),
    "settings.f.remote.approveL2.label": (
        "Answer confirmations up to L2",
        "处理 L2 及以下的确认请求",
    ),
    "settings.f.remote.approveL2.help": (
        "Approve or deny waiting actions rated L2 or lower (needs Watch); L3 and L4 only "
        "from this machine.",
        "批准或拒绝风险等级为 L2 及以下的等待操作（需要开启“查看”）；L3 和 L4 只能在本机处理。",
    ),
    "settings.f.remote.control.label": ("Control sessions", "控制会话"),
    "settings.f.remote.control.help": (
        "Pause, take over, hand back, stop and change window (needs Watch).",
        "暂停、接管、交还、停止和切换窗口（需要开启“查看”）。",
    ),
}
