"""The shell policy's vocabulary: which programs, subcommands, variables and paths mean what.

Plain data, no logic, so a reviewer can read (and extend) what the rater knows in one place:
the inspectors, writers, network/package/destructive/system tools, the words that wrap or
open a command, the variables that change what runs, the sensitive paths, git's
subcommands by effect and the writers' options that take a value. The raters
(``shell_commands``, ``shell_programs``) and the scan (``shell_scan``) decide with them.
"""

from __future__ import annotations

import re

READ_ONLY = frozenset(
    {
        "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "file", "stat",
        "du", "df", "tree", "sort", "uniq", "cut", "tr", "nl", "tac", "rev", "column", "diff",
        "cmp", "comm", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
        "sha512sum", "b2sum", "cksum", "strings", "od", "hexdump", "less", "more", "jq",
        "base64", "paste", "join", "fold", "fmt", "expand", "unexpand", "look", "lsattr",
        "getfacl", "namei",
    }
)  # fmt: skip
#: inspectors whose arguments are not files
NO_PATH_ARGS = frozenset(
    {
        "echo", "printf", "pwd", "whoami", "id", "groups", "uname", "nproc", "arch", "tty",
        "locale", "uptime", "free", "ps", "lsblk", "lscpu", "printenv", "which", "type",
        "basename", "dirname", "realpath", "readlink", "true", "false", "test", "[", ":",
        "sleep", "seq", "yes", "expr", "date", "xprop", "xwininfo", "xdpyinfo", "xlsclients",
        "set", "unset", "shopt", "umask", "ulimit", "wait", "exit", "return", "shift", "hash",
        "export", "declare", "typeset", "readonly", "local", "env", "pgrep", "pidof",
    }
)  # fmt: skip
#: every argument is written (created, changed, moved away or deleted)
WRITE_ALL = frozenset(
    {
        "touch", "mkdir", "rmdir", "rm", "mv", "chmod", "chown", "chgrp", "truncate", "tee",
        "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz",
    }
)  # fmt: skip
#: the last argument (or -t DIR) is written, the others are read
WRITE_LAST = frozenset({"cp", "ln", "install", "rsync"})
NETWORK_TOOLS = frozenset(
    {
        "curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "ftp", "lftp", "telnet",
        "socat", "nmap", "ping", "ping6", "dig", "nslookup", "host", "whois", "traceroute",
        "tracepath", "mtr", "aria2c", "http", "https", "xh", "gh", "openssl", "rclone",
        "mosh",
    }
)  # fmt: skip
PACKAGE_TOOLS = frozenset(
    {
        "apt", "apt-get", "aptitude", "dpkg", "snap", "flatpak", "pip", "pip3", "pipx", "npm",
        "npx", "pnpm", "yarn", "gem", "cargo", "go", "conda", "brew", "dnf", "yum", "zypper",
        "pacman", "apk", "uv",
    }
)  # fmt: skip
#: package-tool subcommands that only report
PACKAGE_QUERIES = frozenset(
    {"list", "ls", "show", "freeze", "version", "--version", "-v", "-V", "help", "--help"}
)
DESTRUCTIVE_TOOLS = frozenset(
    {
        "dd", "shred", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk",
        "mkswap", "badblocks", "blkdiscard", "hdparm", "mke2fs", "tune2fs", "srm",
    }
)  # fmt: skip
SYSTEM_CONTROL = frozenset(
    {
        "shutdown", "reboot", "poweroff", "halt", "systemctl", "loginctl", "init", "telinit",
        "mount", "umount", "swapon", "swapoff", "losetup", "cryptsetup", "modprobe", "insmod",
        "rmmod", "sysctl", "iptables", "ip6tables", "nft", "ufw", "service", "timedatectl",
        "hostnamectl", "useradd", "userdel", "usermod", "passwd", "chpasswd",
    }
)  # fmt: skip
SIGNAL_TOOLS = frozenset({"kill", "pkill", "killall", "killall5", "skill", "xkill"})
DETACH_TOOLS = frozenset({"setsid", "at", "batch", "crontab", "daemonize", "start-stop-daemon"})
DESKTOP_INPUT = frozenset(
    {
        "xdotool", "ydotool", "xte", "wmctrl", "xclip", "xsel", "wl-copy", "wl-paste",
        "xinput", "xset", "xrandr", "setxkbmap", "xmodmap", "xsendkey",
    }
)  # fmt: skip
EVALUATORS = frozenset({"eval", "exec", "source", ".", "trap", "alias", "enable", "coproc"})
#: words that open or close a compound command: not analysed, fail closed
COMPOUND = frozenset(
    {
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "select", "function", "{", "}", "[[", "]]",
    }
)  # fmt: skip
#: prefixes that run the rest of the words as the command
PREFIXES = frozenset({"nohup", "time", "!", "builtin", "nice", "ionice", "stdbuf", "timeout"})
ENV_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
#: variables that change which program runs or what it loads
RISKY_ENV = re.compile(
    r"^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH|PAGER|EDITOR|"
    r"VISUAL|LD_.*|GIT_.*|PYTHON.*|PERL.*|RUBY.*|NODE_OPTIONS|DYLD_.*)$"
)
#: paths a write may always name
SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
#: under the home directory: credentials, and files that run code at the next login
HOME_SENSITIVE = (
    ".ssh", ".gnupg", ".pki", ".local/share/keyrings", ".password-store", ".netrc", ".aws",
    ".azure", ".kube", ".docker", ".config/gcloud", ".config/gh", ".git-credentials",
    ".config/autostart", ".config/systemd", ".bashrc", ".bash_profile", ".bash_login",
    ".profile", ".zshrc", ".zprofile", ".xprofile", ".xsessionrc", ".pam_environment",
    ".mozilla", ".config/chromium", ".config/google-chrome",
)  # fmt: skip
SYSTEM_SENSITIVE = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d")

#: writer options whose value is the next word
WRITER_VALUES = {
    "cp": {"-t", "--target-directory", "-S", "--suffix"},
    "mv": {"-t", "--target-directory", "-S", "--suffix"},
    "ln": {"-t", "--target-directory", "-S", "--suffix"},
    "install": {"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner",
                "-g", "--group"},
    "touch": {"-r", "--reference", "-d", "--date", "-t"},
    "mkdir": {"-m", "--mode"},
    "truncate": {"-s", "--size", "-r", "--reference"},
    "rsync": {"-e", "--rsh"},
}  # fmt: skip

GIT_READ = frozenset(
    {
        "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "grep", "blame",
        "describe", "shortlog", "cat-file", "rev-list", "merge-base", "name-rev",
        "check-ignore", "count-objects", "version", "help", "whatchanged", "show-ref",
        "for-each-ref", "var", "annotate", "diff-tree", "diff-files", "diff-index",
        "--version", "--help",
    }
)  # fmt: skip
GIT_WRITE = frozenset(
    {
        "add", "commit", "checkout", "switch", "restore", "merge", "rebase", "cherry-pick",
        "revert", "init", "mv", "rm", "am", "apply", "notes", "reset", "stash", "tag",
        "branch", "worktree", "remote", "gc", "prune", "bisect", "sparse-checkout", "reflog",
        "clean", "filter-branch", "filter-repo",
    }
)  # fmt: skip
GIT_NETWORK = frozenset(
    {"clone", "fetch", "pull", "push", "ls-remote", "submodule", "send-email", "request-pull"}
)
#: branch / tag / stash / remote / worktree / reflog with these first words only report
GIT_LISTING = frozenset({"list", "show", "get-url"})
