"""The worker process: `python -m compile_lint.confirm.worker`, one torch import for many targets.

Requests and replies are JSON lines on private copies of stdin/stdout; the user's code sees
/dev/null as stdin and prints to stderr, so neither `input()` nor `print` can touch the protocol.
Per target: an eager run traced line by line (which lines ran), the break run under the
graph-break log and the recompile probe; with `--deep`, also a `fullgraph=True` run and the
dynamic-size probe. A fix check loads one fixed file by path under its module's name and runs
only the eager and break runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from types import FrameType
from typing import Any, TextIO

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from compile_lint.confirm.capture import Break, capture_dynamo_log, forced_backend
from compile_lint.confirm.inputs import (
    Made,
    NoInputs,
    code_identity,
    function_target,
    module_target,
    parameter_names,
    unwrapped,
)
from compile_lint.confirm.probe import probe_calls, probe_dtypes, probe_sizes
from compile_lint.confirm.targets import Target, TargetError, compiled, targets_from_factory

LOGGING = "graph_breaks and recompiles artifacts via torch._logging.set_logs, captured by handlers"


def environment(backend: str) -> dict[str, Any]:
    cuda = torch.cuda.is_available()
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "backend": backend,
        "cuda_available": cuda,
        "cuda_version": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch_logging": LOGGING,
        "TORCH_LOGS": os.environ.get("TORCH_LOGS", ""),
    }


class DynamoSettings:
    """torch._dynamo.config as each user module left it after its import, so that a module setting
    e.g. `capture_scalar_outputs` affects its own targets and not the next module's."""

    def __init__(self) -> None:
        self.baseline = torch._dynamo.config.get_config_copy()
        self.after_import: dict[str, dict[str, Any]] = {}

    def load(self, spec: dict[str, Any]) -> Any:
        """Import the user's module by name from its root, every torch.compile forced to the backend."""
        self._apply(self.after_import.get(spec["module"], self.baseline))
        if spec["root"] not in sys.path:
            sys.path.insert(0, spec["root"])
        with forced_backend(spec["backend"]):
            module = importlib.import_module(spec["module"])
        self.after_import.setdefault(spec["module"], torch._dynamo.config.get_config_copy())
        return module

    def load_fixed(self, fixed: dict[str, str], backend: str) -> None:
        """Put the fixed file in sys.modules under the original module's name, so the target's
        module (imported next, after `forget`) and every other importer get the fixed code."""
        name, path = fixed["module"], fixed["path"]
        if fixed["root"] not in sys.path:
            sys.path.insert(0, fixed["root"])
        parent, _, child = name.rpartition(".")
        package = importlib.import_module(parent) if parent else None
        self._apply(self.after_import.get(name, self.baseline))
        search = [fixed["package_dir"]] if fixed.get("package_dir") else None  # a fixed __init__.py
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=search)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with forced_backend(backend):
                spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        if package is not None:
            setattr(package, child, module)

    @staticmethod
    def _apply(settings: dict[str, Any]) -> None:
        with warnings.catch_warnings():  # the copy includes deprecated keys, which warn on load
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(settings)


def forget(files: set[str], target_module: str) -> None:
    """Drop the modules loaded from `files` and the target's module (a factory may live outside
    the linted files), so the next import runs their code again: a fix check must not see the
    original code, nor a later target the fixed one."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name == target_module or (path and (path in files or os.path.realpath(path) in files)):
            del sys.modules[name]


def build(spec: dict[str, Any], module: Any) -> list[Made]:
    torch.manual_seed(0)  # the same random inputs as the --repro-dir scripts
    shape = spec["shape"]
    if spec["kind"] == "function":
        return [function_target(module, spec["attr"], shape)]
    if spec["kind"] == "module":
        return [module_target(module, spec["attr"], shape)]
    factory = getattr(module, spec["attr"], None)
    if not callable(factory):
        raise TargetError(f"{spec['module']} has no callable `{spec['attr']}`")
    setup = f"fn, args, kwargs = _entry(mod.{spec['attr']}(), {{index}})"
    return [Made(t, setup=setup.format(index=i)) for i, t in enumerate(targets_from_factory(factory))]


@contextmanager
def traced_lines(files: set[str]) -> Iterator[dict[str, set[int]]]:
    """Lines executed in `files` while active (sys.settrace: Python 3.11 has no sys.monitoring)."""
    executed: dict[str, set[int]] = {}

    def local(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        if event == "line":
            executed[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def global_(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        filename = frame.f_code.co_filename
        if filename not in files:
            return None
        executed.setdefault(filename, set()).add(frame.f_lineno)
        return local

    sys.settrace(global_)
    try:
        yield executed
    finally:
        sys.settrace(None)


def user_files(paths: list[str]) -> set[str]:
    """The linted files under every spelling the interpreter may use for them."""
    return {p for path in paths for p in (path, os.path.realpath(path), os.path.abspath(path))}


def describe_error(error: BaseException, files: set[str]) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in files]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}{where}: {text[0] if text else ''}".rstrip(": ")


def break_record(brk: Break, files: set[str]) -> dict[str, Any]:
    frame = brk.innermost(lambda f: f in files)
    record = asdict(brk)
    del record["frames"]
    record["user_file"] = os.path.realpath(frame.file) if frame else None
    record["user_line"] = frame.line if frame else None
    record["user_function"] = frame.function if frame else None
    return record


def graph_count() -> int:
    return int(counters["stats"]["unique_graphs"])


def eager_lines(target: Target, files: set[str]) -> dict[str, list[int]]:
    """Run the target eagerly; the lines it executed in `files`, by real path."""
    with torch.compiler.set_stance("force_eager"), traced_lines(files) as executed:
        unwrapped(target.fn)(*target.args, **target.kwargs)
    return {os.path.realpath(f): sorted(lines) for f, lines in executed.items()}


def run_target(made: Made, spec: dict[str, Any], files: set[str]) -> dict[str, Any]:
    target, backend = made.target, spec["backend"]
    identity = code_identity(target.fn)
    result: dict[str, Any] = {
        "name": target.name,
        "covers": [os.path.realpath(identity[0]), identity[1]] if identity else None,
        "repro": {"setup": made.setup, "args": made.args, "kwargs": made.kwargs},
    }
    try:
        result["executed"] = eager_lines(target, files)
    except Exception as error:
        return {**result, "outcome": "raised", "error": describe_error(error, files)}
    torch._dynamo.reset()
    before = graph_count()
    fn = compiled(target, backend)

    def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:  # the probes vary the arguments
        return fn(*args, **kwargs)

    names = parameter_names(target.fn)
    with capture_dynamo_log() as log:
        try:
            call(target.args, target.kwargs)
        except Exception as error:
            return {**result, "outcome": "raised", "error": "under torch.compile: " + describe_error(error, files)}
        result["graphs"] = graph_count() - before
        result["breaks"] = [break_record(b, files) for b in log.breaks]
        variations, every_call = probe_calls(call, target.args, target.kwargs, names, log)  # same compiled state
        deep = spec.get("deep", False)  # the probes that compile again: --deep
        if not every_call:
            variations += probe_dtypes(call, unwrapped(target.fn), target.args, target.kwargs, names, log, deep)
        result.update({"one_graph": None if log.breaks else True, "fullgraph_error": ""})
        if deep and log.breaks:
            result.update(fullgraph(target, backend, files))
        if deep and not every_call:
            variations += probe_sizes(call, target.args, target.kwargs, names, log)
        result["recompiles"] = [{**asdict(v), "every_call": v.every_call} for v in variations]
    return {**result, "outcome": "ok"}


def check_fix(made: Made, spec: dict[str, Any], files: set[str]) -> dict[str, Any]:
    """The fixed code's eager run (did the rewritten lines run?) and its break run."""
    target = made.target
    result: dict[str, Any] = {"name": target.name}
    try:
        result["executed"] = eager_lines(target, files)
    except Exception as error:
        return {**result, "outcome": "raised", "error": describe_error(error, files)}
    torch._dynamo.reset()
    with capture_dynamo_log() as log:
        try:
            compiled(target, spec["backend"])(*target.args, **target.kwargs)
        except Exception as error:
            return {**result, "outcome": "raised", "error": "under torch.compile: " + describe_error(error, files)}
    return {**result, "outcome": "ok", "breaks": [break_record(b, files) for b in log.breaks]}


def fullgraph(target: Target, backend: str, files: set[str]) -> dict[str, Any]:
    torch._dynamo.reset()
    try:
        compiled(target, backend, fullgraph=True)(*target.args, **target.kwargs)
    except Exception as error:
        return {"one_graph": False, "fullgraph_error": describe_error(error, files)}
    return {"one_graph": True, "fullgraph_error": ""}


def handle(request: dict[str, Any], settings: DynamoSettings) -> dict[str, Any]:
    spec, fixed = request["target"], request.get("fixed")
    files = user_files(request["files"])
    if fixed is None:
        return run_all(spec, settings, files, run_target)
    forget(files, spec["module"])
    try:
        try:
            settings.load_fixed(fixed, spec["backend"])
        except BaseException as error:
            error_text = describe_error(error, files)
            return {"outcome": "error", "error": f"cannot import the fixed {fixed['module']}: {error_text}"}
        return run_all(spec, settings, files, check_fix)
    finally:
        forget(files, spec["module"])


Run = Callable[[Made, dict[str, Any], set[str]], dict[str, Any]]


def run_all(spec: dict[str, Any], settings: DynamoSettings, files: set[str], run: Run) -> dict[str, Any]:
    """Import the target's module, make its targets and `run` each one."""
    try:
        module = settings.load(spec)
    except BaseException as error:
        return {"outcome": "error", "error": f"cannot import {spec['module']}: {describe_error(error, files)}"}
    try:
        made = build(spec, module)
    except NoInputs as error:
        return {"outcome": "not-run", "error": str(error)}
    except Exception as error:
        return {"outcome": "error", "error": f"factory {spec['attr']}: {describe_error(error, files)}"}
    runs = []
    for one in made:
        try:
            runs.append(run(one, spec, files))
        except MemoryError:
            runs.append({"name": one.target.name, "outcome": "raised", "error": "ran out of memory"})
        finally:
            torch._dynamo.reset()
    return {"outcome": "ok", "runs": runs}


def serve(requests: TextIO, replies: TextIO) -> None:
    replies.write(json.dumps({"ready": environment(os.environ.get("COMPILE_LINT_BACKEND", "eager"))}) + "\n")
    replies.flush()
    settings = DynamoSettings()
    for line in requests:
        replies.write(json.dumps(handle(json.loads(line), settings)) + "\n")
        replies.flush()


def main() -> None:
    """Keep private copies of the pipes, then give the user's code /dev/null and stderr."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    serve(requests, replies)


if __name__ == "__main__":
    main()
