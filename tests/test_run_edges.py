"""The edges of a run, each through the real command: a run stopped by a signal, a bad or failing
output, --fix on read-only files and hard links, terminal control bytes in what is printed, --deep on
tensors that share a dimension, and a malformed message to the language server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from processes import alive

PYTHON = [sys.executable, "-m", "compile_lint", "--no-cache"]
ENV = {**os.environ, "COLUMNS": "200"}

HANGING = """
import os
import time

import torch


def hang(x):
    with open(os.path.join(os.environ["EDGES_MARKS"], str(os.getpid())), "w"):
        pass  # this worker's pid: the target is running
    time.sleep(600)
    return x + 1


def make():
    return hang, (torch.ones(2),)


def make_too():
    return hang, (torch.ones(3),)
"""


def wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose targets hang, and the folder where each running target writes its worker's pid."""
    (tmp_path / "hang.py").write_text(HANGING)
    marks = tmp_path / "marks"
    marks.mkdir()
    yield tmp_path, marks
    for mark in marks.iterdir():  # never leave a worker behind, whatever the test saw
        if alive(int(mark.name)):
            os.kill(int(mark.name), signal.SIGKILL)


def start_confirm(project: Path, marks: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*PYTHON, "--confirm", "--target", "hang:make", *extra, "hang.py"],
        cwd=project,
        env={**ENV, "EDGES_MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def running_workers(marks: Path, count: int) -> list[int]:
    assert wait_for(lambda: len(list(marks.iterdir())) >= count, 240), "the targets never started"
    return [int(mark.name) for mark in marks.iterdir()]


@pytest.mark.dynamo
@pytest.mark.parametrize(("sent", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")])
def test_a_signal_stops_the_run_and_its_worker(
    hanging: tuple[Path, Path], sent: signal.Signals, code: int, name: str
) -> None:
    project, marks = hanging
    run = start_confirm(project, marks)
    (worker,) = running_workers(marks, 1)
    run.send_signal(sent)
    out, err = run.communicate(timeout=60)
    assert run.returncode == code
    assert err.strip().splitlines() == [f"compile-lint: interrupted ({name}); nothing more was run"]
    assert out == ""
    assert not alive(worker)


@pytest.mark.dynamo
def test_workers_die_with_a_parent_killed_by_sigkill(hanging: tuple[Path, Path]) -> None:
    project, marks = hanging
    run = start_confirm(project, marks)
    (worker,) = running_workers(marks, 1)
    run.kill()
    run.communicate(timeout=60)
    assert run.returncode == -signal.SIGKILL
    assert wait_for(lambda: not alive(worker), 10), "the worker outlived its killed parent"


@pytest.mark.dynamo
def test_sigterm_stops_every_worker_of_a_parallel_run(hanging: tuple[Path, Path]) -> None:
    project, marks = hanging
    run = start_confirm(project, marks, "--target", "hang:make_too", "-j", "2")
    workers = running_workers(marks, 2)
    started = time.monotonic()
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert time.monotonic() - started < 30  # not the targets' 600 s, nor the 900 s timeout
    assert run.returncode == 143
    assert err.strip().splitlines() == ["compile-lint: interrupted (SIGTERM); nothing more was run"]
    assert out == ""
    assert not any(alive(worker) for worker in workers)


def start_parallel_lint(folder: Path) -> subprocess.Popen[str]:
    """`compile-lint -j 2` over 40 files of a second's work, once its processes have started."""
    for index in range(40):
        body = "".join(f"    x = x + {i}\n" for i in range(400))
        (folder / f"m{index}.py").write_text(f"import torch\n\n@torch.compile\ndef f(x):\n{body}    return x\n")
    run = subprocess.Popen(
        [*PYTHON, "-j", "2", "."], cwd=folder, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert wait_for(lambda: children(run.pid), 60), "no -j process started"
    return run


def test_sigterm_stops_a_parallel_static_run(tmp_path: Path) -> None:
    """-j N static lint: the processes analysing files stop with the run (no traceback from any of them)."""
    run = start_parallel_lint(tmp_path)
    pool = children(run.pid)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 143
    assert err.strip().splitlines() == ["compile-lint: interrupted (SIGTERM); nothing more was run"]
    assert out == ""
    assert wait_for(lambda: not any(alive(pid) for pid in pool), 10)


def test_a_parallel_static_run_whose_process_is_killed_says_so(tmp_path: Path) -> None:
    """-j N static lint, one of its processes killed from outside (the OOM killer): an error saying how, not a
    clean exit nor a traceback."""
    run = start_parallel_lint(tmp_path)
    os.kill(children(run.pid)[0], signal.SIGKILL)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 2
    assert err.strip().splitlines() == [
        "compile-lint: a -j process ended without answering (killed by SIGKILL; out of memory?); -j 1 lints in one"
        " process"
    ]
    assert out == ""


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


# -- outputs -------------------------------------------------------------------------------------------
BREAKING = """
import os

import torch


def f(x):
    return x.item() + 1


def make():
    open(os.environ["EDGES_RAN"], "w").close()  # this target ran
    blocker = os.environ.get("EDGES_BLOCK")
    if blocker:
        open(blocker, "w").close()  # a file where the run will want a folder
    return f, (torch.ones(()),)
"""


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        (["--html", "afile"], "--html afile: a file is there; name a folder (it is created if missing)"),
        (["--repro-dir", "afile"], "--repro-dir afile: a file is there; name a folder (it is created if missing)"),
        (["--repro-dir", "afile/scripts"], "--repro-dir afile/scripts: afile is a file, not a folder"),
        (["-o", "missing/report.json"], "-o missing/report.json: the folder missing does not exist"),
        (["-o", "."], "-o .: a folder is there; name a file"),
        (["-o", "locked.json"], "-o locked.json: the file is read-only"),
    ],
)
def test_a_bad_output_is_a_usage_error_before_any_work(tmp_path: Path, option: list[str], problem: str) -> None:
    (tmp_path / "breaking.py").write_text(BREAKING)
    (tmp_path / "afile").write_text("kept")
    (tmp_path / "locked.json").write_text("kept")
    (tmp_path / "locked.json").chmod(0o444)
    ran = tmp_path / "ran"
    result = subprocess.run(
        [*PYTHON, "--confirm", "--target", "breaking:make", *option, "breaking.py"],
        cwd=tmp_path,
        env={**ENV, "EDGES_RAN": str(ran)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"compile-lint: {problem}"]
    assert result.stdout == ""
    assert not ran.exists()  # no target ran
    assert (tmp_path / "afile").read_text() == "kept"
    assert (tmp_path / "locked.json").read_text() == "kept"


@pytest.mark.dynamo
def test_a_stopped_run_leaves_the_previous_report(hanging: tuple[Path, Path]) -> None:
    project, marks = hanging
    previous = '{"findings": []}\n'
    (project / "report.json").write_text(previous)
    run = start_confirm(project, marks, "--format", "json", "-o", "report.json")
    running_workers(marks, 1)
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=60)
    assert run.returncode == 143
    assert (project / "report.json").read_text() == previous
    assert sorted(p.name for p in project.iterdir() if p.is_file()) == ["hang.py", "report.json"]  # no temporary


def test_a_report_is_replaced_whole(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\n\n\n@torch.compile\ndef f(x):\n    return x.item()\n")
    (tmp_path / "report.json").write_text("old")
    result = subprocess.run(
        [*PYTHON, "--format", "json", "-o", "report.json", "m.py"], cwd=tmp_path, capture_output=True, timeout=120
    )
    assert result.returncode == 1
    assert '"code": "TCL101"' in (tmp_path / "report.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "report.json"]


@pytest.mark.dynamo
def test_an_output_failing_after_the_work_keeps_the_findings(tmp_path: Path) -> None:
    (tmp_path / "breaking.py").write_text(BREAKING)
    result = subprocess.run(
        [*PYTHON, "--confirm", "--target", "breaking:make", "--repro-dir", "scripts", "breaking.py"],
        cwd=tmp_path,
        env={**ENV, "EDGES_RAN": str(tmp_path / "ran"), "EDGES_BLOCK": str(tmp_path / "scripts")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "breaking.py:8:5: TCL801 [dynamic-only] Dynamo broke the graph here" in result.stdout
    assert "compile-lint: cannot write to --repro-dir scripts: File exists" in result.stderr
    assert "internal error" not in result.stderr


# -- --fix on read-only files and hard links -----------------------------------------------------------
PRINTING = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"


def test_fix_leaves_read_only_files_and_keeps_hard_links(tmp_path: Path) -> None:
    locked, linked, other = tmp_path / "locked.py", tmp_path / "linked.py", tmp_path / "other_name.py"
    locked.write_text(PRINTING)
    locked.chmod(0o444)
    linked.write_text(PRINTING)
    os.link(linked, other)
    result = subprocess.run(
        [*PYTHON, "--unsafe-fixes", "locked.py", "linked.py"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1  # the read-only file keeps its finding
    assert "compile-lint: locked.py: read-only, not fixed" in result.stdout
    assert "linked.py: rewritten in place, keeping its hard links" in result.stdout
    assert locked.read_text() == PRINTING
    assert locked.stat().st_mode & 0o777 == 0o444
    assert "is_compiling()" in linked.read_text()
    assert os.path.samefile(linked, other)  # one file, fixed under both names
    assert linked.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked.py", "locked.py", "other_name.py"]


# -- terminal control characters -----------------------------------------------------------------------
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\r"  # retitle the terminal, clear it, go back to the line's start
ESCAPED = "\\u001b]0;pwned\\u0007\\u001b[2J\\u000d"


def printed_raw(text: str) -> bool:
    return any(char in text for char in "\x1b\x07\r\x00")


@pytest.mark.parametrize("options", [[], ["--format", "concise"], ["--show-regions"], ["--statistics"]])
def test_control_characters_are_escaped_in_human_readable_formats(tmp_path: Path, options: list[str]) -> None:
    raw, escaped = ESCAPES.removesuffix("\r"), ESCAPED.removesuffix("\\u000d")  # a raw CR would end the line
    source = f'import torch\n\n\n@torch.compile\ndef f(x):\n    print("{raw}", x)\n    return x\n'
    (tmp_path / "escapes.py").write_text(source)
    (tmp_path / "binary.py").write_bytes(bytes(range(256)) * 4)
    result = subprocess.run([*PYTHON, *options, "."], cwd=tmp_path, env=ENV, capture_output=True, timeout=120)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert not printed_raw(out) and not printed_raw(err)
    assert "Traceback" not in err
    if not options:
        assert result.returncode == 1
        call = f'print("{escaped}", x)'
        assert f"    6 |     {call}\n{' ' * 12}{'^' * len(call)}\n" in out  # the caret spans the escaped call
        assert "binary.py:1:1: TCL000 File could not be read, decoded or parsed" in out
    elif options == ["--format", "concise"]:
        assert f'escapes.py:6:5: TCL201 `print("{escaped}", x)`' in out
    elif options == ["--show-regions"]:
        assert "escapes.py:f  region: decorated @torch.compile" in out
        assert "binary.py: not analysed" in out


@pytest.mark.dynamo
def test_control_characters_are_escaped_in_the_confirm_summary(tmp_path: Path) -> None:
    factory = f"def make():\n    raise ValueError({ESCAPES!r})\n"
    (tmp_path / "target.py").write_text(factory)
    result = subprocess.run(
        [*PYTHON, "--confirm", "--target", "target:make", "target.py"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 3
    assert not printed_raw(result.stdout) and not printed_raw(result.stderr)
    assert (
        f"  target:make: error: factory make: ValueError at {tmp_path / 'target.py'}:2: \\u001b]0;pwned"
        in result.stdout
    )


# -- the language server ---------------------------------------------------------------------------------
def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def replies(output: bytes) -> list[dict[str, object]]:
    found = []
    while output:
        header, _, rest = output.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        found.append(json.loads(rest[:length]))
        output = rest[length:]
    return found


@pytest.mark.parametrize(
    "bad_header",
    [b"Content-Type: application/vscode-jsonrpc\r\n\r\n", b"Content-Length: many\r\n\r\n"],
)
def test_the_language_server_answers_a_malformed_header_and_keeps_serving(tmp_path: Path, bad_header: bytes) -> None:
    pytest.importorskip("pygls")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    lost = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "shutdown"}).encode()
    messages = [
        frame(initialize),
        bad_header + lost,
        frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "method": "exit"}),
    ]
    result = subprocess.run(
        [*PYTHON[:3], "lsp"], cwd=tmp_path, input=b"".join(messages), capture_output=True, timeout=120
    )
    answers = replies(result.stdout)
    assert [answer.get("id") for answer in answers] == [1, None, 2]
    error = answers[1]["error"]
    assert isinstance(error, dict) and error["code"] == -32700
    assert "malformed message header (no valid Content-Length)" in error["message"]
    assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": None}
    assert "malformed message header" in result.stderr.decode()


# -- --deep: tensors that share a dimension ------------------------------------------------------------
MASKED = """
import torch


class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)

    def forward(self, input_ids, attention_mask):
        return self.embed(input_ids) * attention_mask.unsqueeze(-1)


def make():
    return Masked(), (torch.zeros(2, 8, dtype=torch.long), torch.ones(2, 8))


def viewed(x):
    return x.view(2, 4)


def make_viewed():
    return viewed, (torch.ones(8),)
"""


@pytest.mark.dynamo
def test_deep_grows_tensors_that_share_a_dimension_together(tmp_path: Path) -> None:
    (tmp_path / "masked.py").write_text(MASKED)
    result = subprocess.run(
        [
            *PYTHON,
            "--confirm",
            "--deep",
            "--format",
            "json",
            "--target",
            "masked:make",
            "--target",
            "masked:make_viewed",
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    target, viewed = json.loads(result.stdout)["environment"]["targets"]
    triggers = {v["trigger"].split(" (")[0]: v for v in target["recompiles"]}
    both = triggers["input_ids, attention_mask dims 0, 1"]  # batch and sequence grown in both inputs at once
    assert both["free_dims"] == [0, 1] and both["recompiled_calls"] == 0
    assert not any(v["not_probed"] for v in target["recompiles"])
    (unprobed,) = [v for v in viewed["recompiles"] if v["not_probed"]]  # a size the code cannot take, with why
    assert unprobed["trigger"] == "x dim 0 (8 -> 9 -> 10)"
    assert unprobed["not_probed"].startswith("the call raises with x grown alone: ")
    text = subprocess.run(
        [*PYTHON, "--confirm", "--deep", "--target", "masked:make_viewed"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        "masked:make_viewed [viewed]: varying x dim 0 (8 -> 9 -> 10): not probed: the call raises with x" in text.stdout
    )
