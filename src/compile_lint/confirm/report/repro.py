"""`--repro-dir`: one standalone script per confirmed break, to attach to a bug or rerun after a fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from compile_lint import __version__
from compile_lint.finding import Finding

LOAD_TARGET = '''\
sys.path.insert(0, {root!r})
mod = importlib.import_module({module!r})


def _entry(produced, index):
    """The factory protocol: (fn, args), (fn, args, kwargs), or a list of those."""
    entry = (produced if isinstance(produced, list) else [produced])[index]
    args = entry[1] if isinstance(entry[1], (tuple, list)) else (entry[1],)
    return entry[0], tuple(args), dict(entry[2]) if len(entry) == 3 else {{}}
'''

TEMPLATE = '''\
"""Reproduces a graph break found by `compile-lint --confirm`.

Break:    {where} {gb_code} {gb_type}
Finding:  {code} {message}
Recorded: python {python}, torch {torch}, compile-lint {version}, backend {backend}
Run it:   python {name}   (Dynamo prints the break and any recompiles on stderr)
"""

import os

os.environ.setdefault("TORCH_LOGS", "graph_breaks,recompiles")  # must be set before torch is imported

import importlib
import sys

import torch
import torch._dynamo

{load_target}

torch.manual_seed(0)
{setup}
{inputs}fn = getattr(fn, "_torchdynamo_orig_callable", getattr(fn, "_orig_mod", fn))  # undo any torch.compile
torch._dynamo.reset()
torch.compile(fn, backend={backend!r})(*args, **kwargs)
'''


def load_target(root: str, module: str) -> str:
    """What every generated script starts with: the user's module imported, and the factory protocol read."""
    return LOAD_TARGET.format(root=root, module=module)


def script(finding: Finding, brk: dict[str, Any], run: dict[str, Any], environment: dict[str, Any], name: str) -> str:
    repro = run["repro"]
    inputs = ""
    if repro["args"] or repro["kwargs"] or not repro["setup"].startswith("fn, args"):
        args = "".join(f"{a}, " for a in repro["args"])
        kwargs = ", ".join(f"{k!r}: {v}" for k, v in repro["kwargs"].items())
        inputs = f"args = ({args})\nkwargs = {{{kwargs}}}\n"
    return TEMPLATE.format(
        where=f"{finding.path}:{brk['user_line']}",
        gb_code=brk["gb_code"] or "",
        gb_type=brk["gb_type"],
        code=finding.code,
        message=finding.message,
        python=environment.get("python", "?"),
        torch=environment.get("torch", "?"),
        version=__version__,
        backend=run["backend"],
        name=name,
        load_target=load_target(run["root"], run["module"]),
        setup=repro["setup"],
        inputs=inputs,
    )


def write_all(
    directory: Path, confirmed: list[tuple[Finding, dict[str, Any], dict[str, Any]]], environment: dict[str, Any]
) -> list[Path]:
    """One script per (finding, break, run), named after the file, line and code."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for finding, brk, run in confirmed:
        stem = re.sub(r"\W+", "_", Path(finding.path).stem)
        name = f"repro_{stem}_{finding.line}_{finding.code}.py"
        path = directory / name
        path.write_text(script(finding, brk, run, environment, name), encoding="utf-8")
        written.append(path)
    return written
