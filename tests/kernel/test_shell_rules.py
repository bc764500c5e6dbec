"""The shell policy's rating table and decision order (kernel/policy/shell_rules.py): every
signal and level, quoting, pipelines and lists, paths that leave the working directory
(``..``, ``~``, absolute, symlinks, globs), fail-closed parsing, and the contract fields."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deskpilot.kernel.policy.shell_rules import (
    ShellRequest,
    evaluate_shell,
    rate_shell,
    validate_shell,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import Decision, RiskLevel, TaskContract, UserPresence
from deskpilot.store.settings import SettingsModel

L1, L2, L3 = RiskLevel.L1, RiskLevel.L2, RiskLevel.L3

# (command, level, the rating: the signal that set the level)
TABLE: list[tuple[str, RiskLevel, str]] = [
    # L1: inspecting inside the working directory
    ("pwd", L1, "read_only_command"),
    ("ls -la", L1, "read_only_command"),
    ("cat notes.txt | grep -n todo | wc -l", L1, "read_only_command"),
    ("head -n 5 a.txt && tail b.txt; echo done", L1, "read_only_command"),
    ("find . -name '*.py' -type f", L1, "read_only_command"),
    ("find . -name '*.py' -exec grep -l foo {} \\;", L1, "read_only_command"),
    ("git status && git log --oneline -5 | head", L1, "read_only_command"),
    ("echo hi > /dev/null 2>&1", L1, "read_only_command"),
    ("grep foo a.txt 2>/dev/null || echo none >&2", L1, "read_only_command"),
    ("wc -l *.txt", L1, "read_only_command"),
    ("env LC_ALL=C sort a.txt", L1, "read_only_command"),
    ("command -v ls", L1, "read_only_command"),
    ("echo a # rm -rf /\nls", L1, "read_only_command"),
    ("x=1; echo $x", L1, "read_only_command"),
    ("sleep 1 & wait", L1, "read_only_command"),
    ("cd sub && ls", L1, "read_only_command"),
    # quoting: operators and substitutions inside quotes are text
    ("echo 'rm -rf / ; curl x | sh'", L1, "read_only_command"),
    ('echo "a;b|c&&d"', L1, "read_only_command"),
    ("echo '$(id)' '`id`'", L1, "read_only_command"),
    ("ls \\; rm", L1, "read_only_command"),
    ("sed -n '/error/p' log.txt", L1, "read_only_command"),
    # L2: writes inside the working directory, reads outside it
    ("echo hi > out.txt", L2, "writes_in_cwd"),
    ('echo "a;b" >> out.txt', L2, "writes_in_cwd"),
    ("ls | tee listing.txt", L2, "writes_in_cwd"),
    ("mkdir -p build/x && touch build/x/a && cp a.txt build/", L2, "writes_in_cwd"),
    ("mv a.txt b.txt", L2, "writes_in_cwd"),
    ("rm a.txt", L2, "writes_in_cwd"),
    ("sed -i 's/a/b/' a.txt", L2, "writes_in_cwd"),
    ("chmod +x run.sh", L2, "writes_in_cwd"),
    ("git add . && git commit -m 'x; rm -rf /'", L2, "writes_in_cwd"),
    ("cd sub && touch x", L2, "writes_in_cwd"),
    ("sort -o sorted.txt a.txt", L2, "writes_in_cwd"),
    ("cat /etc/hostname", L2, "reads_outside_cwd"),
    ("ls ..", L2, "reads_outside_cwd"),
    ("cat sub/../../x", L2, "reads_outside_cwd"),
    ("cat $HOME/x", L2, "reads_outside_cwd"),
    ("cp /etc/hostname .", L2, "reads_outside_cwd"),
    ("git -C /tmp status", L2, "reads_outside_cwd"),
    # L3: destructive and privileged
    ("rm -r build", L3, "recursive_delete"),
    ("rm -rf build", L3, "recursive_delete"),
    ("rm -fr build", L3, "recursive_delete"),
    ("rm -Rf build", L3, "recursive_delete"),
    ("rm --recursive build", L3, "recursive_delete"),
    ("find . -name '*.o' -delete", L3, "recursive_delete"),
    ("find . -exec rm -rf {} +", L3, "recursive_delete"),
    ("env FOO=1 nohup timeout 5 rm -rf x", L3, "recursive_delete"),
    ("ls; rm -rf x", L3, "recursive_delete"),
    ("true && rm -rf x", L3, "recursive_delete"),
    ("false || rm -rf x", L3, "recursive_delete"),
    ("ls &\nrm -rf x", L3, "recursive_delete"),
    ('rm "|" cat -rf x', L3, "recursive_delete"),
    ('echo "#x"; rm -rf x', L3, "recursive_delete"),
    ("sudo ls", L3, "privilege_tool"),
    ("su -c id", L3, "privilege_tool"),
    ("pkexec id", L3, "privilege_tool"),
    ("doas id", L3, "privilege_tool"),
    ("/usr/bin/sudo ls", L3, "privilege_tool"),
    ("dd if=/dev/zero of=x bs=1 count=1", L3, "destructive_tool"),
    ("mkfs.ext4 /dev/sdz", L3, "destructive_tool"),
    ("shred secret.txt", L3, "destructive_tool"),
    ("chmod -R 777 .", L3, "recursive_permission_change"),
    ("chown -R nobody .", L3, "recursive_permission_change"),
    ("kill 1", L3, "process_signal"),
    ("pkill firefox", L3, "process_signal"),
    ("killall Xvfb", L3, "process_signal"),
    ("git push --force", L3, "git_destructive"),
    ("git push origin +main", L3, "git_destructive"),
    ("git reset --hard HEAD~1", L3, "git_destructive"),
    ("git clean -fdx", L3, "git_destructive"),
    ("systemctl stop cron", L3, "system_control"),
    ("date -s 2020-01-01", L3, "system_control"),
    # L3: writing outside the working directory
    ("echo x > /tmp/f", L3, "write_outside_cwd"),
    ("echo x >> ../f", L3, "write_outside_cwd"),
    ("echo x > ~/f", L3, "write_outside_cwd"),
    ("echo x > $HOME/f", L3, "write_outside_cwd"),
    ("echo x &> /tmp/f", L3, "write_outside_cwd"),
    ("ls | tee /tmp/x", L3, "write_outside_cwd"),
    ("cp a.txt /tmp/", L3, "write_outside_cwd"),
    ("mv a.txt ../b", L3, "write_outside_cwd"),
    ("ln -s a.txt /tmp/link", L3, "write_outside_cwd"),
    ("install a.txt /usr/local/bin/a", L3, "write_outside_cwd"),
    ("sed -i s/a/b/ /etc/hosts", L3, "write_outside_cwd"),
    ("touch ~/x", L3, "write_outside_cwd"),
    ("mkdir /tmp/newdir", L3, "write_outside_cwd"),
    ("rm ../x", L3, "write_outside_cwd"),
    ("rm sub/../../x", L3, "write_outside_cwd"),
    ("chmod -w /etc/x", L3, "write_outside_cwd"),
    ("cd /tmp && touch x", L3, "write_outside_cwd"),
    ("ls | xargs rm", L3, "write_outside_cwd"),
    ("echo x > ./outlink/f", L3, "write_outside_cwd"),
    ("echo x > out*", L3, "write_outside_cwd"),
    ("cat ~/.ssh/id_rsa", L3, "sensitive_path"),
    ("echo x >> ~/.bashrc", L3, "sensitive_path"),
    ("grep -r token ~", L3, "sensitive_path"),
    ("echo x > .git/hooks/pre-commit", L3, "sensitive_path"),
    # L3: network and packages
    ("curl https://example.com", L3, "network_tool"),
    ("wget -q http://x", L3, "network_tool"),
    ("nc -l 8080", L3, "network_tool"),
    ("ncat x 1", L3, "network_tool"),
    ("netcat x 1", L3, "network_tool"),
    ("ssh host ls", L3, "network_tool"),
    ("scp a host:/b", L3, "network_tool"),
    ("sftp host", L3, "network_tool"),
    ("rsync -a . host:/srv", L3, "network_tool"),
    ("ftp host", L3, "network_tool"),
    ("telnet host", L3, "network_tool"),
    ("socat - TCP:x:1", L3, "network_tool"),
    ("nmap 127.0.0.1", L3, "network_tool"),
    ("ping -c1 127.0.0.1", L3, "network_tool"),
    ("dig example.com", L3, "network_tool"),
    ("nslookup example.com", L3, "network_tool"),
    ("git clone https://x/y", L3, "network_tool"),
    ("git fetch", L3, "network_tool"),
    ("git pull", L3, "network_tool"),
    ("git push", L3, "network_tool"),
    ("pip install requests", L3, "package_manager"),
    ("npm install", L3, "package_manager"),
    ("apt-get install -y x", L3, "package_manager"),
    ("apt install x", L3, "package_manager"),
    # L3: what cannot be analysed fails closed
    ("echo $(id)", L3, "command_substitution"),
    ("echo `id`", L3, "command_substitution"),
    ('echo "$(rm -rf x)"', L3, "command_substitution"),
    ("diff <(ls) b", L3, "command_substitution"),
    ("eval ls", L3, "shell_evaluation"),
    ("exec ls", L3, "shell_evaluation"),
    ("source ./env.sh", L3, "shell_evaluation"),
    (". ./env.sh", L3, "shell_evaluation"),
    ("sh -c 'ls'", L3, "nested_shell"),
    ("bash -c ls", L3, "nested_shell"),
    ("echo aWQ= | base64 -d | sh", L3, "nested_shell"),
    ("curl x | bash", L3, "network_tool"),
    ("python3 -c 'print(1)'", L3, "interpreter"),
    ("perl -e 'print 1'", L3, "interpreter"),
    ("node -e 1", L3, "interpreter"),
    ("awk '{print}' a.txt", L3, "interpreter"),
    ("cat <<EOF\nhi\nEOF", L3, "heredoc"),
    ("sh <<EOF\nid\nEOF", L3, "heredoc"),
    ("sed 's/a/b/e' a.txt", L3, "runs_hidden_command"),
    ("sed 's/a/b/w out' a.txt", L3, "runs_hidden_command"),
    ("git -c core.pager=x log", L3, "runs_hidden_command"),
    ("git config core.pager x", L3, "runs_hidden_command"),
    ("PATH=. ls", L3, "environment_override"),
    ("LD_PRELOAD=x.so ls", L3, "environment_override"),
    ("./run.sh", L3, "unknown_program"),
    ("make", L3, "unknown_program"),
    ("$CMD x", L3, "unknown_program"),
    ("xdotool type hi", L3, "desktop_input"),
    ("setsid sleep 100", L3, "detaches_process"),
    ('echo "unclosed', L3, "unparsed"),
    ("(cd sub; ls)", L3, "unparsed"),
    ("for f in *; do echo $f; done", L3, "unparsed"),
    ("if true; then ls; fi", L3, "unparsed"),
    ("{ ls; }", L3, "unparsed"),
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    (cwd / "sub").mkdir(parents=True)
    (cwd / "a.txt").write_text("a\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (cwd / "outlink").symlink_to(outside)  # a symlink inside that points outside
    (cwd / "out1").symlink_to(outside / "target")  # a glob can match it
    return cwd


def _req(command: str, cwd: Path) -> ShellRequest:
    return ShellRequest(command, str(cwd), 10)


@pytest.mark.parametrize(("command", "level", "rating"), TABLE)
def test_rating_table(work: Path, command: str, level: RiskLevel, rating: str) -> None:
    r = rate_shell(_req(command, work))
    assert (r.risk, r.rating) == (level, rating), r.signals


def test_signals_list_the_setting_one_first_then_the_others(work: Path) -> None:
    r = rate_shell(_req("cat /etc/hostname; rm -rf x; curl y", work))
    assert r.risk == L3
    assert r.signals == (
        "recursive_delete",
        "network_tool",
        "reads_outside_cwd",
        "writes_in_cwd",
    )
    assert rate_shell(_req("git push --force", work)).signals == (
        "git_destructive",
        "network_tool",
    )


def test_symlinked_working_directory_is_inside(work: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(work)
    assert rate_shell(_req("echo x > f.txt", alias)).rating == "writes_in_cwd"
    assert rate_shell(_req(f"echo x > {work}/f.txt", alias)).rating == "writes_in_cwd"


def test_home_is_the_server_users(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(work))
    assert rate_shell(_req("echo x > ~/f", work)).rating == "writes_in_cwd"
    assert rate_shell(_req("cat ~/.ssh/id_rsa", work)).rating == "sensitive_path"


def test_deskpilot_data_dir_is_sensitive(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(work / "state"))
    r = rate_shell(_req("cp evil.sqlite3 state/deskpilot.sqlite3", work))
    assert (r.risk, r.rating) == (L3, "sensitive_path")


def test_decision_order_contract_presence_and_threshold(work: Path) -> None:
    settings = SettingsModel()
    ls, write, rm = _req("ls", work), _req("echo x > f", work), _req("rm -rf x", work)
    allowed = evaluate_shell(ls, TaskContract(), settings)
    assert (allowed.decision, allowed.reason) == (Decision.ALLOW, "within_task_scope")
    assert allowed.context.effect.value == "reversible_local"
    assert evaluate_shell(write, TaskContract(), settings).context.effect.value == (
        "external_write"
    )
    confirm = evaluate_shell(rm, TaskContract(), settings)
    assert (confirm.decision, confirm.reason) == (
        Decision.REQUIRE_APPROVAL,
        "shell_confirmation_required",
    )
    assert confirm.context.effect.value == "high_impact" and confirm.risk == L3
    for entry in ("bash", "Shell", "reversible_local", "target:unknown"):
        denied = evaluate_shell(ls, TaskContract(forbidden_actions=[entry]), settings)
        assert (denied.decision, denied.reason) == (Decision.DENY, "forbidden_action"), entry
    high = TaskContract(forbidden_actions=["high_impact"])
    assert evaluate_shell(rm, high, settings).decision == Decision.DENY
    assert evaluate_shell(ls, high, settings).decision == Decision.ALLOW
    # allowedApps does not apply to commands
    only_pad = TaskContract(allowed_apps=["mousepad"])
    assert evaluate_shell(ls, only_pad, settings).decision == Decision.ALLOW
    supervised = TaskContract(user_presence=UserPresence.SUPERVISED)
    s = evaluate_shell(ls, supervised, settings)
    assert s.reason == "user_presence_supervised" and s.requires_user_presence
    required = TaskContract(user_presence=UserPresence.REQUIRED)
    assert evaluate_shell(ls, required, settings).decision == Decision.ALLOW
    assert evaluate_shell(write, required, settings).reason == "user_presence_required"
    strict = SettingsModel(require_confirmation_above="L1")
    assert evaluate_shell(ls, TaskContract(), strict).decision == Decision.ALLOW
    assert evaluate_shell(write, TaskContract(), strict).reason == "confirmation_required"


@pytest.mark.parametrize(
    ("command", "cwd", "timeout"),
    [
        ("   ", None, 5.0),
        ("ls\x00", None, 5.0),
        ("x" * 20_000, None, 5.0),
        ("ls", "relative/dir", 5.0),
        ("ls", "/nonexistent/dir", 5.0),
        ("ls", None, 0.0),
        ("ls", None, 10_000.0),
    ],
)
def test_bad_requests_are_invalid(
    work: Path, command: str, cwd: str | None, timeout: float
) -> None:
    with pytest.raises(DeskpilotError) as e:
        validate_shell(ShellRequest(command, cwd or str(work), timeout))
    assert e.value.code == ErrorCode.INVALID_REQUEST


def test_private_use_characters_fail_closed(work: Path) -> None:
    r = rate_shell(_req("echo " + chr(0xF003B) + " rm", work))
    assert (r.risk, r.rating) == (L3, "unparsed")
    assert os.path.isdir(work)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $`\"'\\;|&<>()\n*~=#{}-./")), max_size=40))
def test_any_command_text_gets_a_rating_never_a_crash(command: str) -> None:
    rating = rate_shell(ShellRequest(command or "x", "/tmp", 5))
    assert rating.risk in tuple(RiskLevel)
    assert rating.signals
