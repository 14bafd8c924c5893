"""Summaries shared by the projects of one process (the flake8 plugin's, one per file): taken only when the
program taking them gets the same answers to the questions their walk asked, so no finding changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_lint.analysis.flow import Flow
from compile_lint.analysis.program import Program
from compile_lint.analysis.sharing import (
    ANSWERING,
    QUESTIONS,
    TRANSPARENT,
    WRITES,
    Shared,
    SharedSummaries,
    SharingProgram,
)
from compile_lint.analysis.values import INT_VALUE, NONE_VALUE, TRUE_VALUE
from compile_lint.config import Options
from compile_lint.engine import load_source, parse_source
from compile_lint.finding import Finding
from compile_lint.project import Project

CONTEXT = """\
class Config:
    def __init__(self, value):
        self.value = value


def scaled(x):
    return x * 2


def setting(config):
    return config.value


LIMIT = scaled(2)
"""


def model(value: str) -> str:
    """A model whose `if` tests what the context's `setting` reads from a `Config(value)` it made."""
    return f"""\
import torch
from torch import nn

from pkg.context import LIMIT, Config, scaled, setting


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config({value})

    def forward(self, x):
        y = scaled(x)
        if setting(self.config):
            return y
        return -y * LIMIT
"""


@pytest.fixture
def package(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "context.py").write_text(CONTEXT)
    return tmp_path / "pkg"


def findings(path: Path, shared: SharedSummaries | None) -> list[Finding]:
    return project_findings({path: path.read_text()}, shared)


def project_findings(texts: dict[Path, str], shared: SharedSummaries | None) -> list[Finding]:
    """The files (with these texts) linted as one project."""
    indexes = [parse_source(str(path), text) for path, text in texts.items()]
    parsed = [index for index in indexes if not isinstance(index, Finding)]
    assert len(parsed) == len(indexes)
    return Project(parsed, Options(), (), load_source, shared=shared).findings()


def walks_of(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions summarised from now on, by name, and the modules whose globals were bound, by file name."""
    walked: list[str] = []
    run, run_module = Flow.run, Flow.run_module

    def counted(flow: Flow) -> object:
        if flow.function is not None and flow.visitor is None:
            walked.append(flow.function.qualname)
        return run(flow)

    def counted_module(flow: Flow, body: object) -> object:
        walked.append(Path(flow.index.path).name)
        return run_module(flow, body)  # type: ignore[arg-type]

    monkeypatch.setattr(Flow, "run", counted)
    monkeypatch.setattr(Flow, "run_module", counted_module)
    return walked


def one_after_another(
    package: Path, monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> tuple[list[Finding], list[Finding], list[Finding], list[str]]:
    """A model made with `Config(first)` linted, then one made with `Config(second)` taking its summaries: the
    first's findings, the second's with them and alone, and what the second walked."""
    earlier, later = package / "earlier.py", package / "later.py"
    earlier.write_text(model(first))
    later.write_text(model(second))
    alone = findings(later, None)
    shared = SharedSummaries()
    before = findings(earlier, shared)
    walked = walks_of(monkeypatch)
    return before, findings(later, shared), alone, walked


def test_a_summary_is_taken_when_the_answers_its_walk_got_hold(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, taking, alone, walked = one_after_another(package, monkeypatch, "torch.ones(1)", "torch.ones(2)")
    assert taking == alone
    # Taken from the first project: `scaled`, `setting`, `Config.__init__` (its write made again) and the context's
    # globals. Walked: the linted file's own code.
    assert set(walked) == {"later.py", "Net.__init__"}


def test_a_summary_whose_answers_differ_is_walked_again(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before, taking, alone, walked = one_after_another(package, monkeypatch, "torch.ones(1)", "1")
    assert [f.code for f in before] == ["TCL103"]  # `setting` returns the tensor it was given
    assert taking == alone == []
    assert "setting" in walked and "scaled" not in walked  # `config.value` answers otherwise here


REPORT = """\

class Report:
    def __init__(self, config):
        self.ready = True
        self.kind = config.value
"""


def test_the_writes_of_a_summary_not_taken_after_all_are_undone(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Report.__init__` writes `ready`, then reads `config.value`, which the second model sets otherwise: the write
    made while asking its questions again is undone, and the second program's attributes are those it has alone."""
    (package / "context.py").write_text(CONTEXT + REPORT)
    undone: list[str] = []
    undo_write = SharingProgram._undo_write

    def counted(program: SharingProgram, cls: tuple[str, str], attribute: str, *values: object) -> None:
        undone.append(attribute)
        undo_write(program, cls, attribute, *values)  # type: ignore[arg-type]

    monkeypatch.setattr(SharingProgram, "_undo_write", counted)
    use = "        report = Report(self.config)\n        if report.kind:\n            return y\n"

    def project(value: str, shared: SharedSummaries | None) -> Project:
        path = package / f"model_{len(value)}.py"
        path.write_text(
            model(value)
            .replace("import LIMIT, Config,", "import LIMIT, Config, Report,")
            .replace("        if setting(self.config):\n            return y\n", use)
        )
        index = parse_source(str(path), path.read_text())
        assert not isinstance(index, Finding)
        return Project([index], Options(), (), load_source, shared=shared)

    shared = SharedSummaries()
    assert [f.code for f in project("torch.ones(1)", shared).findings()] == ["TCL103"]
    taking, alone = project("1", shared), project("1", None)
    assert undone == ["ready"]
    assert taking.findings() == alone.findings() == []
    assert taking.program._attributes == alone.program._attributes

    # The undo itself (the walk above writes `ready` again, so it shows only here): an attribute the program did not
    # have is gone again, one it had is back to its value.
    program = taking.program
    assert isinstance(program, SharingProgram)
    report = (str(package / "context.py"), "Report")
    kind = program.attribute(report, "kind")
    for before in (None, INT_VALUE):
        if before is not None:
            program.record_attribute(report, "extra", before)
        attributes = {cls: dict(values) for cls, values in program._attributes.items()}
        write = ("record_attribute", (report, "extra", TRUE_VALUE), {}, None)
        differing = ("attribute", (report, "kind"), {}, NONE_VALUE)
        assert kind != NONE_VALUE
        found = Shared(program.class_info(report), {}, None, [write, differing], frozenset())  # type: ignore[arg-type]
        assert not program._answers_alike(found)
        assert program._attributes == attributes


def test_unsaved_text_of_a_file_shared_summaries_read_from_disk_is_what_counts(package: Path) -> None:
    """An editor lints a context file's unsaved text together with its user: the summaries walked when the file
    was read from disk do not stand in for it."""
    user = package / "user.py"
    user.write_text(model("torch.ones(1)"))
    shared = SharedSummaries()
    findings(user, shared)
    edited = {user: user.read_text(), package / "context.py": CONTEXT.replace("x * 2", "x * x.sum().item()")}
    with_shared, alone = project_findings(edited, shared), project_findings(edited, None)
    assert with_shared == alone
    assert "TCL101" in {f.code for f in alone}  # the unsaved `.item()` in `scaled`


def test_the_flake8_plugin_answers_a_file_as_it_would_alone(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the plugin, whose projects share the process's store: the second file takes summaries the first left,
    and its findings are its own."""
    from compile_lint.flake8_plugin import CompileLintPlugin

    taken: list[bool] = []
    answers_alike = SharingProgram._answers_alike

    def counted(program: SharingProgram, found: Shared) -> bool:
        taken.append(answers_alike(program, found))
        return taken[-1]

    monkeypatch.setattr(SharingProgram, "_answers_alike", counted)

    (package.parent / "pyproject.toml").write_text("[tool.compile-lint]\n")
    tensor, number = package / "tensor.py", package / "number.py"
    tensor.write_text(model("torch.ones(1)"))
    number.write_text(model("1"))

    def reported(path: Path) -> list[str]:
        plugin = CompileLintPlugin(None, path.read_text().splitlines(keepends=True), str(path))  # type: ignore[arg-type]
        return [message.split()[0] for _, _, message, _ in plugin.run()]

    assert reported(tensor) == ["TCL103"]
    assert not taken
    assert reported(number) == [f.code for f in findings(number, None)] == []
    assert True in taken and False in taken  # `scaled` taken; `setting`, whose `config.value` differs, walked again


def test_every_method_of_the_program_is_sorted() -> None:
    """A method a walk may call is a question (its answers written down), resolves calls by asking questions, or
    writes; a new one left unsorted would quietly stop the summaries that call it from being shared."""
    methods = {name for name, value in vars(Program).items() if callable(value) and not name.startswith("__")}
    sorted_ = [*QUESTIONS, *TRANSPARENT, *WRITES, *ANSWERING]
    assert len(sorted_) == len(set(sorted_))
    assert methods == set(sorted_)
