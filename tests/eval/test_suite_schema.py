"""The suite format: the starter suite is valid and covered by the reference solver, and a
broken suite is refused with the place of each problem in the file and what is wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from deskpilot.eval.suite import (
    SUITE_SCHEMA,
    TASK_DIR,
    SuiteError,
    load_suite,
    parse_suite,
)
from deskpilot.protocol.verification import FileSpec

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "suites" / "starter.json"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _suite(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {"schema": SUITE_SCHEMA, "name": "t", "tasks": list(tasks)}


def _task(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "a",
        "instruction": "do it",
        "success": [{"kind": "file", "path": f"{TASK_DIR}/out.txt", "assertion": "exists"}],
    }
    return {**base, **over}


def _problems(data: Any) -> list[str]:
    with pytest.raises(SuiteError) as info:
        parse_suite(data, "s.json")
    return info.value.problems


def test_starter_suite_is_valid_and_every_task_has_a_reference_plan() -> None:
    suite = load_suite(STARTER)
    assert suite.name == "starter" and len(suite.tasks) >= 20
    from reference_solver import PLANS

    assert sorted(PLANS) == sorted(t.id for t in suite.tasks)
    apps = {t.target or "" for t in suite.tasks}
    assert {"zenity", "gnome-calculator", "mousepad", "chromium"} <= apps
    for t in suite.tasks:
        criteria = t.criteria("/tmp/x")
        assert criteria, t.id
        for spec in criteria:  # nothing of a task points outside its own directory
            if isinstance(spec, FileSpec):
                assert spec.path.startswith("/tmp/x/"), (t.id, spec.path)


def test_task_dir_is_resolved_in_setup_and_criteria() -> None:
    suite = parse_suite(
        _suite(
            _task(
                setup={
                    "files": [{"path": "in.txt", "text": "x"}],
                    "launch": [{"app": "zenity", "args": [f"--filename={TASK_DIR}/in.txt"]}],
                    "openUrl": f"file://{TASK_DIR}/p.html",
                }
            )
        )
    )
    task = suite.tasks[0]
    setup = task.resolved_setup("/run/t1/work")
    assert setup.launch[0].args == ["--filename=/run/t1/work/in.txt"]
    assert setup.open_url == "file:///run/t1/work/p.html"
    assert task.target == "chromium"  # a page task is about the browser
    spec = task.criteria("/run/t1/work")[0]
    assert isinstance(spec, FileSpec) and spec.path == "/run/t1/work/out.txt"


def test_each_problem_is_named_by_its_place_and_task() -> None:
    problems = _problems(
        _suite(
            _task(id="ok-1"),
            _task(
                id="bad-spec",
                success=[
                    {"kind": "file", "path": "relative.txt", "assertion": "exists"},
                ],
            ),
            _task(id="bad-launch", setup={"launch": [{"app": "sh -c 'rm -rf ~'"}]}),
            _task(id="bad-file", setup={"files": [{"path": "../escape.txt"}]}),
            _task(id="bad-url", setup={"openUrl": "https://example.com/"}),
            _task(id="Bad Id"),
        )
    )
    text = "\n".join(problems)
    assert "tasks[1] (task 'bad-spec'): success[0]: path must be absolute" in text
    assert "tasks[2].setup.launch[0].app (task 'bad-launch'): one program, no arguments" in text
    assert "tasks[3].setup.files[0].path (task 'bad-file'): must be a path inside" in text
    assert "tasks[4].setup.openUrl (task 'bad-url'): must be a local file page" in text
    assert "tasks[5].id (task 'Bad Id'): ids are 1-64" in text
    assert len(problems) == 5  # the valid task says nothing


def test_a_spec_field_error_names_the_field() -> None:
    problems = _problems(
        _suite(
            _task(
                success=[
                    {"kind": "file", "path": "/x", "assertion": "exists"},
                    {"kind": "accessibility", "selector": {}, "assertion": "exists"},
                ]
            )
        )
    )
    assert problems == [
        "tasks[0] (task 'a'): success[1].selector: a selector needs at least one of role, "
        "name, nameContains, states"
    ]


def test_schema_id_duplicates_and_unknown_fields_are_refused() -> None:
    wrong = _problems({**_suite(_task()), "schema": "deskpilot.eval.suite/9"})
    assert wrong == [
        "schema: this deskpilot reads 'deskpilot.eval.suite/1' suites, not 'deskpilot.eval.suite/9'"
    ]
    twice = _problems(_suite(_task(), _task()))
    assert twice == ["(the file): task id 'a' is used twice"]
    extra = _problems(_suite(_task(retries=3)))
    assert extra == ["tasks[0].retries (task 'a'): Extra inputs are not permitted"]
    empty = _problems(_suite(_task(success=[])))
    assert empty[0].startswith("tasks[0].success (task 'a'): List should have at least 1")


def test_a_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"schema": "deskpilot.eval.suite/1",\n  "name": oops}')
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.problems[0].startswith("line 2 column 11: not JSON")
    assert str(path) in str(info.value)
    missing = tmp_path / "none.json"
    with pytest.raises(SuiteError, match="cannot read it"):
        load_suite(missing)


def test_select_keeps_the_suite_order_and_refuses_unknown_ids() -> None:
    suite = parse_suite(_suite(_task(id="a"), _task(id="b"), _task(id="c")))
    assert [t.id for t in suite.select(["c", "a"])] == ["a", "c"]
    assert [t.id for t in suite.select(None)] == ["a", "b", "c"]
    with pytest.raises(SuiteError, match="no task 'zz'"):
        suite.select(["a", "zz"])


def test_the_starter_file_is_what_the_docs_show() -> None:
    data = json.loads(STARTER.read_text())
    assert data["schema"] == SUITE_SCHEMA
    doc = (ROOT / "docs" / "eval.md").read_text()
    assert SUITE_SCHEMA in doc and "deskpilot.eval.results/1" in doc
    for var in ("DESKPILOT_EVAL_MCP_URL", "DESKPILOT_EVAL_MCP_TOKEN", "DESKPILOT_EVAL_TASK_ID"):
        assert var in doc


# ---------------------------------------------------------------------- YAML suites


def test_the_starter_suite_written_as_yaml_validates_identically(tmp_path: Path) -> None:
    """The same schema in YAML: the starter suite converted reads as the same suite."""
    import yaml

    data = json.loads(STARTER.read_text())
    for name in ("starter.yaml", "starter.yml"):
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        assert load_suite(path).model_dump() == load_suite(STARTER).model_dump()


def test_a_yaml_problem_says_its_line(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "schema: deskpilot.eval.suite/1\n"  # 1
        "name: mine\n"
        "tasks:\n"
        "  - id: ok\n"
        "    instruction: do it\n"  # 5
        "    success:\n"
        "      - {kind: file, path: '${TASK_DIR}/x', assertion: exists}\n"
        "  - id: bad-launch\n"
        "    instruction: x\n"
        "    setup:\n"  # 10
        "      launch:\n"
        "        - app: sh -c 'rm -rf ~'\n"
        "    success: [{kind: file, path: '${TASK_DIR}/x', assertion: exists}]\n"
        "    wait_forever: true\n"
        "  - id: bad-spec\n"  # 15
        "    instruction: x\n"
        "    success:\n"
        "      - kind: file\n"
        "        path: '${TASK_DIR}/x'\n"
        "        assertion: exists\n"  # 20
        "      - kind: accessibility\n"
        "        selector: {}\n"
        "        assertion: exists\n"
    )
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    text = "\n".join(info.value.problems)
    assert (
        "tasks[1].setup.launch[0].app (task 'bad-launch', line 12): one program, no arguments"
        in text
    )
    assert "tasks[1].wait_forever (task 'bad-launch', line 14): Extra inputs" in text
    # a spec's problem is raised at the task's level: the line is the spec's own field
    assert "tasks[2] (task 'bad-spec', line 22): success[1].selector: a selector needs" in text
    assert len(info.value.problems) == 3
    assert str(path) in str(info.value)


def test_a_file_that_is_not_yaml_says_where(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text("schema: deskpilot.eval.suite/1\nname: [oops\ntasks: []\n")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    (problem,) = info.value.problems
    assert problem.startswith("line 3 column 6: not YAML:"), problem


def test_yaml_is_read_as_plain_data_only(tmp_path: Path) -> None:
    """The safe loader: a Python tag is refused, nothing is constructed or run."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "schema: deskpilot.eval.suite/1\nname: !!python/object/apply:os.system ['touch pwned']\n"
    )
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert "not YAML" in info.value.problems[0] and "line 2" in info.value.problems[0]
    assert not (tmp_path / "pwned").exists()


def test_aliases_that_expand_too_far_are_refused(tmp_path: Path) -> None:
    """Nine lines of nested aliases stand for a billion strings: refused before validation."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert "expands to more than" in info.value.problems[0]


def test_the_docs_yaml_example_is_a_valid_suite(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "eval.md").read_text()
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "doc.yaml"
    path.write_text(block)
    (task,) = load_suite(path).tasks
    assert task.setup.launch[0].args[-1] == "--separator=|"
    spec = task.criteria("/w")[0]
    assert isinstance(spec, FileSpec) and spec.text == "Ada Lovelace|Paris\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--entry", "--display=:77"],
        ["-display", ":0"],
        ["--screen", "1"],
        ["-platform", "xcb"],
        ["--ozone-platform=wayland"],
        ["--gdk-backend=wayland"],
        ["--text=a\x00b"],
    ],
)
def test_a_setup_cannot_choose_another_display_or_smuggle_a_nul(args: list[str]) -> None:
    """A suite's apps run on the task's private desktop only: an argument that picks the
    display (GTK, Xt, Qt, Chromium spellings) is refused with the reason, as is a NUL (it
    would only fail at exec)."""
    setup = {"launch": [{"app": "zenity", "args": args}]}
    (problem,) = _problems(_suite(_task(setup=setup)))
    assert "tasks[0].setup.launch[0].args" in problem
    assert ("display" in problem and "private desktop" in problem) or "NUL" in problem


def test_words_about_displays_are_fine_in_values() -> None:
    setup = {"launch": [{"app": "zenity", "args": ["--info", "--text=the display is --screen"]}]}
    assert parse_suite(_suite(_task(setup=setup)), "s.json").tasks[0].setup.launch[0].args
