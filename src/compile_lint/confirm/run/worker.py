"""The worker process: `python -m compile_lint.confirm.run.worker`, one torch import for many targets.

Requests and replies are JSON lines on private copies of stdin/stdout; the user's code sees
/dev/null as stdin and prints to stderr, so neither `input()` nor `print` can touch the protocol.

A request names its job (`JOBS`; without `job`, "fix-check" if it has `fixed`, else "confirm").
While a job runs, the worker may send notes (lines without `outcome`): `{"stage": ...}` says what
it is doing, `{"timeout": seconds}` is a factory's own time limit for this request. The reply is
the first line with `outcome`. Every request starts from a clean state (state.py).

"confirm", per target: an eager run traced line by line (which lines ran), the break run under
the graph-break log (which lines Dynamo traced) and the recompile probe; with `--deep`, also a
`fullgraph=True` run and the dynamic-size probe.
"fix-check" loads one fixed file by path under its module's name and runs the eager and break runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import linecache
import os
import platform
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from types import FrameType
from typing import Any, TextIO

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from compile_lint.confirm import TIMEOUT_ATTRIBUTE
from compile_lint.confirm.run.capture import Break, Frame, capture_dynamo_log, forced_backend, library_of
from compile_lint.confirm.run.cascade import cascade, nested, nested_mode_available, side_by_side, take_frames, totals
from compile_lint.confirm.run.explain import explain
from compile_lint.confirm.run.inputs import (
    Made,
    NoInputs,
    code_identity,
    function_target,
    module_target,
    parameter_names,
    unwrapped,
)
from compile_lint.confirm.run.owner import owner_of, user_fix
from compile_lint.confirm.run.probe import probe_calls, probe_dtypes, probe_sizes
from compile_lint.confirm.run.state import CleanStates, State
from compile_lint.confirm.run.targets import Target, TargetError, compiled, targets_from_factory

LOGGING = "graph_breaks, recompiles and trace_source artifacts via torch._logging.set_logs, captured by handlers"
USER_ERRORS = (Exception, SystemExit, KeyboardInterrupt)  # what a target may raise; the worker lives on


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


def backend_error(backend: str) -> str:
    """Why torch.compile would reject `backend`, or "" if it accepts it."""
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    try:
        lookup_backend(backend)
    except Exception:
        return (
            f"unknown --backend {backend!r}; torch {torch.__version__} has: {', '.join(list_backends(exclude_tags=()))}"
        )
    return ""


class Channel:
    """The private reply pipe: notes while a request runs, then its reply."""

    def __init__(self, replies: TextIO) -> None:
        self.replies = replies

    def note(self, **fields: Any) -> None:
        self.send(fields)

    def send(self, message: dict[str, Any]) -> None:
        self.replies.write(json.dumps(message) + "\n")
        self.replies.flush()


@dataclass
class Context:
    states: CleanStates
    channel: Channel


def load(spec: dict[str, Any], states: CleanStates | None) -> Any:
    """Import the user's module by name from its root, every torch.compile forced to the backend.
    With `states`, the import starts from the module's clean state and records the one it leaves."""
    if states is not None:
        states.before_import(spec["module"])
    if spec["root"] not in sys.path:
        sys.path.insert(0, spec["root"])
    with forced_backend(spec["backend"]):
        module = importlib.import_module(spec["module"])
    if states is not None:
        states.imported(spec["module"])
    return module


def load_fixed(fixed: dict[str, str], backend: str) -> None:
    """Put the fixed file in sys.modules under the original module's name, so the target's
    module (imported next, after `forget`) and every other importer get the fixed code."""
    name, path = fixed["module"], fixed["path"]
    if fixed["root"] not in sys.path:
        sys.path.insert(0, fixed["root"])
    parent, _, child = name.rpartition(".")
    package = importlib.import_module(parent) if parent else None
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


def forget(files: set[str], target_module: str) -> None:
    """Drop the modules loaded from `files` and the target's module (a factory may live outside
    the linted files), so the next import runs their code again: a fix check must not see the
    original code, nor a later target the fixed one."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name == target_module or (path and (path in files or os.path.realpath(path) in files)):
            del sys.modules[name]


def build(spec: dict[str, Any], module: Any, channel: Channel) -> list[Made]:
    torch.manual_seed(0)  # the same random inputs as the --repro-dir scripts
    shape = spec["shape"]
    if spec["kind"] == "function":
        return [function_target(module, spec["attr"], shape)]
    if spec["kind"] == "module":
        return [module_target(module, spec["attr"], shape)]
    factory = getattr(module, spec["attr"], None)
    if not callable(factory):
        raise TargetError(f"{spec['module']} has no callable `{spec['attr']}`")
    timeout = getattr(factory, TIMEOUT_ATTRIBUTE, None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        channel.note(timeout=float(timeout))
    channel.note(stage=f"calling the factory {spec['attr']}()")
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
    """One line: the type, where in the user's files, and the message; never raises (a
    `__str__` that raises is reported by the type alone)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in files]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    if isinstance(error, SystemExit):
        code = "" if error.code is None else repr(error.code)
        return f"called sys.exit({code}){where}"
    try:
        lines = str(error).strip().splitlines()
    except BaseException:
        return f"{type(error).__name__}{where} (its message cannot be shown: str() raised)"
    return f"{type(error).__name__}{where}: {lines[0] if lines else ''}".rstrip(": ")


def break_record(brk: Break) -> dict[str, Any]:
    """The break at its innermost user frame (any file outside torch and the standard library),
    the chain of user frames that led there (innermost first), and the library file it happened
    in when it happened inside torch or the standard library."""
    frames = [f for f in brk.frames or [Frame(brk.file, brk.line, "")] if library_of(f.file) != "compile-lint"]
    user = [f for f in reversed(frames) if library_of(f.file) is None]
    innermost = frames[-1] if frames else Frame(brk.file, brk.line, "")
    library = library_of(innermost.file) or ""
    record = asdict(brk)
    del record["frames"]
    top = user[0] if user else None
    record["user_file"] = os.path.realpath(top.file) if top else None
    record["user_line"] = top.line if top else None
    record["user_function"] = top.function if top else None
    record["chain"] = [{"file": os.path.realpath(f.file), "line": f.line, "function": f.function} for f in user]
    record["inside"] = {"library": library, "file": innermost.file, "line": innermost.line} if library else None
    record["replayed_logging"] = bool(top and library and _replays_logging(top, innermost))
    record["owner"] = owner_of(innermost.file)  # the distribution and version owning the file it broke in
    record["fix_at"] = user_fix(frames)  # for a break in code the user does not own: their innermost call
    return record


def _replays_logging(user: Frame, innermost: Frame) -> bool:
    """torch 2.14 replays a reorderable logging call after the graph, from the function's `def`
    line, and logs breaks inside `logging` that cost no graph (shared/torch-2.14-notes.md)."""
    in_logging = os.path.join("logging", "__init__.py") in innermost.file
    header = linecache.getline(user.file, user.line).lstrip().startswith(("def ", "async def ", "@"))
    return in_logging and header


def graph_count() -> int:
    return int(counters["stats"]["unique_graphs"])


def eager_lines(target: Target, files: set[str]) -> dict[str, list[int]]:
    """Run the target eagerly; the lines it executed in `files`, by real path."""
    with torch.compiler.set_stance("force_eager"), traced_lines(files) as executed:
        unwrapped(target.fn)(*target.args, **target.kwargs)
    return {os.path.realpath(f): sorted(lines) for f, lines in executed.items()}


def run_target(made: Made, spec: dict[str, Any], files: set[str], channel: Channel) -> dict[str, Any]:
    target, backend = made.target, spec["backend"]
    identity = code_identity(target.fn)
    result: dict[str, Any] = {
        "name": target.name,
        "covers": [os.path.realpath(identity[0]), identity[1]] if identity else None,
        "repro": {"setup": made.setup, "args": made.args, "kwargs": made.kwargs},
    }
    channel.note(stage=f"running {target.name} eagerly")
    try:
        result["executed"] = eager_lines(target, files)
    except USER_ERRORS as error:
        return {**result, "outcome": "raised", "error": describe_error(error, files)}
    torch._dynamo.reset()
    before = graph_count()
    fn = compiled(target, backend)

    def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:  # the probes vary the arguments
        return fn(*args, **kwargs)

    names = parameter_names(target.fn)
    channel.note(stage=f"compiling {target.name} (backend {backend})")
    take_frames()
    with capture_dynamo_log(frozenset(files)) as log:
        try:
            call(target.args, target.kwargs)
        except USER_ERRORS as error:
            return {**result, "outcome": "raised", "error": "under torch.compile: " + describe_error(error, files)}
        log.traced_files = frozenset()  # the probes' calls do not say what the target's call traced
        result["traced"] = {os.path.realpath(f): sorted(lines) for f, lines in log.traced.items()}
        result["graphs"] = graph_count() - before
        result["own_recompiles"] = len(log.recompiles)  # during the target's own call, before any probe
        result["own_explained"] = own_recompiles(log.recompiles)
        frames, breaks = take_frames(), list(log.breaks)
        result["breaks"] = [{**break_record(b), "cascade": cascade(b, frames)} for b in breaks]
        result["cascade"] = {"default": totals(frames, result["graphs"])}
        channel.note(stage=f"probing {target.name} for recompiles")
        variations, every_call = probe_calls(
            call, unwrapped(target.fn), target.args, target.kwargs, names, log
        )  # same compiled state
        deep = spec.get("deep", False)  # the probes that compile again: --deep
        if not every_call:
            variations += probe_dtypes(call, unwrapped(target.fn), target.args, target.kwargs, names, log, deep)
        result.update({"one_graph": None if log.breaks else True, "fullgraph_error": ""})
        if deep and log.breaks:
            channel.note(stage=f"compiling {target.name} with fullgraph=True")
            result.update(fullgraph(target, backend, files))
        if deep and not every_call:
            channel.note(stage=f"probing {target.name} with dynamic sizes")
            variations += probe_sizes(call, target.args, target.kwargs, names, log)
        result["recompiles"] = [{**asdict(v), "every_call": v.every_call} for v in variations]
    if spec.get("nested_graph_breaks"):
        result["cascade"].update(nested_side(target, backend, result["breaks"], breaks, files, channel))
    return {**result, "outcome": "ok"}


def own_recompiles(messages: list[str]) -> list[dict[str, Any]]:
    """Each recompile of the target's own call: the newest cached graph's failed guard, explained."""
    found = []
    for message in messages:
        explained = explain(message, lambda path: os.path.isabs(path) and library_of(path) is None)
        if explained:
            found.append(asdict(explained[0]))
    return found


def nested_side(
    target: Target, backend: str, records: list[dict[str, Any]], breaks: list[Break], files: set[str], channel: Channel
) -> dict[str, Any]:
    """--nested-graph-breaks: the cascade again with torch._dynamo.config.nested_graph_breaks on."""
    if not nested_mode_available():
        return {"nested_error": f"torch {torch.__version__} has no torch._dynamo.config.nested_graph_breaks"}
    channel.note(stage=f"compiling {target.name} with nested graph breaks")
    try:
        found = nested(lambda: compiled(target, backend)(*target.args, **target.kwargs), graph_count)
    except USER_ERRORS as error:
        return {"nested_error": "under nested graph breaks: " + describe_error(error, files)}
    return {"nested": side_by_side(records, breaks, _place, found)}


def _place(brk: Break) -> tuple[Any, ...]:
    """A break across two compiles: its innermost user line and type."""
    top = brk.innermost(lambda file: library_of(file) is None)
    return (top.file, top.line, brk.gb_type) if top else (brk.file, brk.line, brk.gb_type)


def check_fix(made: Made, spec: dict[str, Any], files: set[str], channel: Channel) -> dict[str, Any]:
    """The fixed code's eager run (did the rewritten lines run?) and its break run."""
    target = made.target
    result: dict[str, Any] = {"name": target.name}
    channel.note(stage=f"running the fixed {target.name} eagerly")
    try:
        result["executed"] = eager_lines(target, files)
    except USER_ERRORS as error:
        return {**result, "outcome": "raised", "error": describe_error(error, files)}
    torch._dynamo.reset()
    channel.note(stage=f"compiling the fixed {target.name}")
    with capture_dynamo_log() as log:
        try:
            compiled(target, spec["backend"])(*target.args, **target.kwargs)
        except USER_ERRORS as error:
            return {**result, "outcome": "raised", "error": "under torch.compile: " + describe_error(error, files)}
    return {**result, "outcome": "ok", "breaks": [break_record(b) for b in log.breaks]}


def fullgraph(target: Target, backend: str, files: set[str]) -> dict[str, Any]:
    torch._dynamo.reset()
    try:
        compiled(target, backend, fullgraph=True)(*target.args, **target.kwargs)
    except USER_ERRORS as error:
        return {"one_graph": False, "fullgraph_error": describe_error(error, files)}
    return {"one_graph": True, "fullgraph_error": ""}


Run = Callable[[Made, dict[str, Any], set[str], Channel], dict[str, Any]]
Job = Callable[[dict[str, Any], Context], dict[str, Any]]


def confirm_job(request: dict[str, Any], context: Context) -> dict[str, Any]:
    files = user_files(request["files"])
    spec = request["target"]
    context.channel.note(stage=f"importing {spec['module']}")
    try:
        module = load(spec, context.states)
    except USER_ERRORS as error:
        return {"outcome": "error", "error": f"cannot import {spec['module']}: {describe_error(error, files)}"}
    return run_all(spec, module, files, run_target, context.channel)


def fix_check_job(request: dict[str, Any], context: Context) -> dict[str, Any]:
    spec, fixed = request["target"], request["fixed"]
    files = user_files(request["files"])
    for name in (spec["module"], fixed["module"]):  # imported afresh, from the worker's state
        context.states.forget(name)
    forget(files, spec["module"])
    context.states.baseline.restore()
    try:
        try:
            load_fixed(fixed, spec["backend"])
            module = load(spec, None)
        except USER_ERRORS as error:
            error_text = describe_error(error, files)
            return {"outcome": "error", "error": f"cannot import the fixed {fixed['module']}: {error_text}"}
        return run_all(spec, module, files, check_fix, context.channel)
    finally:
        forget(files, spec["module"])
        for name in (spec["module"], fixed["module"]):
            context.states.forget(name)


def measure_job(request: dict[str, Any], context: Context) -> dict[str, Any]:
    """--timing / --coverage."""
    from compile_lint.confirm.measure.timing import measure  # imports this module: load it on first use

    return measure(request, context)


JOBS: dict[str, Job] = {"confirm": confirm_job, "fix-check": fix_check_job, "measure": measure_job}


def run_all(spec: dict[str, Any], module: Any, files: set[str], run: Run, channel: Channel) -> dict[str, Any]:
    """Make the module's targets and `run` each one, each from the state the factory left."""
    try:
        made = build(spec, module, channel)
    except NoInputs as error:
        return {"outcome": "not-run", "error": str(error)}
    except USER_ERRORS as error:
        return {"outcome": "error", "error": f"factory {spec['attr']}: {describe_error(error, files)}"}
    built = State.now()
    runs = []
    for one in made:
        built.restore()
        try:
            runs.append(run(one, spec, files, channel))
        except MemoryError:
            runs.append({"name": one.target.name, "outcome": "raised", "error": "ran out of memory"})
        finally:
            torch._dynamo.reset()
    return {"outcome": "ok", "runs": runs}


def handle(request: dict[str, Any], context: Context) -> dict[str, Any]:
    """Run the request's job from a clean state; a failure of compile-lint itself is a reply too."""
    job = request.get("job") or ("fix-check" if request.get("fixed") else "confirm")
    context.states.baseline.restore()
    try:
        return JOBS[job](request, context)
    except Exception as error:  # compile-lint's own bug costs this request, not the worker
        return {"outcome": "error", "error": f"compile-lint internal error: {describe_error(error, set())}"}


def serve(requests: TextIO, replies: TextIO) -> None:
    backend = os.environ.get("COMPILE_LINT_BACKEND", "eager")
    channel = Channel(replies)
    channel.send({"ready": environment(backend), "backend_error": backend_error(backend)})
    context = Context(CleanStates(), channel)
    for line in requests:
        reply = handle(json.loads(line), context)
        try:
            channel.send(reply)
        except (TypeError, ValueError) as error:  # a value JSON cannot hold: say so, keep serving
            channel.send({"outcome": "error", "error": f"compile-lint internal error: reply not sent: {error}"})


def end_with_parent(requests: int) -> None:
    """End this worker, and what it started, once the parent's end of the request pipe closes: the
    parent is gone, whatever ended it (even SIGKILL), and nobody enforces the time or memory limits
    any more. A thread, since the main thread may be deep in a target that never returns."""

    def watch() -> None:
        poller = select.poll()
        poller.register(requests, 0)  # no events asked for: wakes only when the pipe hangs up
        while not poller.poll():
            pass
        if os.getpgid(0) == os.getpid():  # the parent starts each worker as its own process group
            os.killpg(0, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def main() -> None:
    """Keep private copies of the pipes, then give the user's code /dev/null and stderr."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    end_with_parent(requests.fileno())
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    serve(requests, replies)


if __name__ == "__main__":
    main()
