"""`compile-lint demo`: the first minute. One realistic model, what a graph break is, then the three steps a
user takes (static pass, --confirm, timing), each shown as the command it is."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

MODEL = "tiny_moe.py"
INTRO = (
    "A graph break is a line torch.compile cannot put in its graph (a tensor value read into Python, a print, an "
    "output whose size depends on the data): the graph ends there and Python runs the line.\n"
    "Each break splits the model into smaller graphs with Python in between, and a break inside a loop makes the "
    "whole function run eagerly, so the speed-up you compiled for is lost without an error."
)


def steps(model: str) -> list[tuple[str, list[str]]]:
    """What the demo runs on the copied model: the title of each step and its command line."""
    return [
        ("Static pass: no torch import, a second or two", [model]),
        (
            "Real Dynamo: a status per finding, eager against compiled time",
            ["--confirm", "--timing", "--target", f"{model}:make", model],
        ),
    ]


def _heading(console: Console, title: str) -> None:
    """A rule across a terminal; elsewhere (where the console does not wrap) one line of 80 columns."""
    console.print(Rule(title, align="left"), width=None if console.is_terminal else 80)


def main(argv: Sequence[str], console: Console, run: Callable[[list[str]], int]) -> int:
    """Copy the demo model to a fresh folder and run each step through `run` (the CLI's own entry point)."""
    folder = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="compile-lint-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / MODEL
    with resources.as_file(resources.files("compile_lint") / "data" / MODEL) as source:
        shutil.copyfile(source, model)
    console.print(f"compile-lint demo: a small mixture-of-experts model, copied to {model}", highlight=False)
    console.print(f"(the commands below run in {folder})\n", highlight=False)
    console.print(INTRO, highlight=False, soft_wrap=True)
    worst = 0
    previous = os.getcwd()
    os.chdir(folder)  # the reports then name `tiny_moe.py`, not a long temporary path
    try:
        for number, (title, command) in enumerate(steps(MODEL), 1):
            _heading(console, f"{number}. {title}")
            console.print(f"$ compile-lint {' '.join(command)}", markup=False, highlight=False)
            worst = max(worst, run([*command, "--no-cache"]))
    finally:
        os.chdir(previous)
    _heading(console, "Next")
    console.print(
        f"See the rewrites: compile-lint --unsafe-fixes --diff {model}\nExplain a rule:   compile-lint rule TCL401",
        markup=False,
        highlight=False,
    )
    return worst if worst > 1 else 0  # findings are the point of the demo; an error or unchecked target is not
