"""Command line: wires config, engine and reporters together; no analysis happens here."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from compile_lint import __version__, atomic, notebooks, versions
from compile_lint.analysis.source import source_lines
from compile_lint.config import MODES, Config, ConfigError, load_config
from compile_lint.engine import build_project, discover, lint
from compile_lint.finding import Finding
from compile_lint.reporters.escape import printable
from compile_lint.reporters.styled import Output

if TYPE_CHECKING:
    from compile_lint.confirm.measure.measure import MeasureOptions
    from compile_lint.confirm.session import ConfirmOptions, ConfirmResult, Progress
    from compile_lint.fixes.codemods import Safety

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_UNCHECKED = 3  # --confirm: some target could not be checked (or nothing ran); --exit-zero does not cover it
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # the shell's codes for SIGINT and SIGTERM
CONFIRM_ONLY = (
    "target",
    "backend",
    "timeout",
    "repro_dir",
    "memory_limit",
    "max_auto_targets",
    "auto_targets",
    "deep",
    "baseline",
    "update_baseline",
    "nested_graph_breaks",
)


def _codes(value: str) -> list[str]:
    return [code.strip().upper() for code in value.split(",") if code.strip()]


def _globs(value: str) -> list[str]:
    return [glob.strip() for glob in value.split(",") if glob.strip()]


def help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's formatter at the width it would choose itself, without the `shutil` import it makes for
    that (it builds a formatter for every option added, so every run paid for it)."""
    return argparse.HelpFormatter(prog, width=terminal_columns() - 2)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else the terminal's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compile-lint",
        formatter_class=help_formatter,
        description="Find torch.compile graph breaks and recompiles before you profile. "
        "Also: `compile-lint rules` lists the rules, `compile-lint rule TCL101` explains one, "
        "`compile-lint lsp` runs the language server, `compile-lint demo` shows it all on a small model.",
    )
    parser.add_argument(
        "paths", nargs="*", default=["."], help="files, folders or notebooks (.ipynb) to lint (default: .)"
    )
    formats = ["full", "concise", "json", "sarif", "junit", "github", "text"]
    parser.add_argument(
        "--format",
        "--output-format",
        choices=formats,
        default="text",
        metavar="FORMAT",
        help="full (the default, also called text): each finding with its source line, GB pages and fix; concise: "
        "one line per finding; json, sarif or github",
    )
    parser.add_argument("-o", "--output-file", type=Path, metavar="FILE", help="write the report to FILE")
    parser.add_argument("--select", type=_codes, help="only report codes with these prefixes, e.g. TCL1,TCL201")
    parser.add_argument(
        "--extend-select", type=_codes, metavar="CODES", help="also report these (e.g. the opt-in TCL902)"
    )
    parser.add_argument("--ignore", type=_codes, help="never report codes with these prefixes")
    parser.add_argument(
        "--exclude", type=_globs, metavar="GLOBS", help="globs of files and folders not to lint (replaces the default)"
    )
    parser.add_argument(
        "--extend-exclude", type=_globs, metavar="GLOBS", help="more globs of files and folders not to lint"
    )
    parser.add_argument(
        "--force-exclude",
        action="store_true",
        help="skip excluded files even when named explicitly (as pre-commit names them)",
    )
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per code instead")
    parser.add_argument(
        "--show-fixes",
        action="store_true",
        help="mark findings an automatic fix removes ([*]: --fix, [*unsafe]: --unsafe-fixes) and say what it does",
    )
    parser.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# noqa: CODE` to every line with findings (to adopt compile-lint on an existing tree)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="lint files in N processes (0: one per core)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the summary cache")
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even with findings (errors still exit 2, a --confirm target that could not be checked 3)",
    )
    parser.add_argument("--fix", action="store_true", help="apply the safe fixes, then report what is left")
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="also apply fixes that change evaluation (torch.where computes both branches; "
        "guarded prints do not run under compile); implies --fix",
    )
    parser.add_argument("--diff", action="store_true", help="print the fixes as a diff; write nothing")
    parser.add_argument(
        "--mode",
        choices=MODES,
        help="all (default): report every path; inference: self.training is False, training-only findings are "
        "dropped; training: self.training is True",
    )
    parser.add_argument(
        "--torch-version",
        type=_torch_version,
        metavar="X.Y",
        help="predict for this torch release (overrides `torch-version` in [tool.compile-lint]; default: the "
        "installed torch); torch is not imported either way",
    )
    parser.add_argument(
        "--show-regions",
        action="store_true",
        help="list every compiled region and how each reached function is reached",
    )
    confirm = parser.add_argument_group("--confirm", "run the compiled regions under real Dynamo (executes your code)")
    confirm.add_argument("--confirm", action="store_true", help="give every finding a status and find missed breaks")
    confirm.add_argument(
        "--confirm-notebooks",
        action="store_true",
        help="also run notebooks: each one's code cells top to bottom as one module, in the worker (runs all of "
        "their code; kernel state and cell order are not reproduced); implies --confirm",
    )
    confirm.add_argument(
        "--target",
        action="append",
        metavar="MOD:FACTORY",
        help="a zero-argument factory returning (fn, args[, kwargs]) or a list of them; repeatable. "
        "Named targets run alone (see --auto-targets)",
    )
    confirm.add_argument(
        "--auto-targets",
        action="store_true",
        default=None,
        help="also run the compiled regions compile-lint can call by itself when targets are named",
    )
    confirm.add_argument(
        "--max-auto-targets", type=int, metavar="N", help="run at most N automatic targets (default: 50)"
    )
    confirm.add_argument("--backend", help="torch.compile backend (default: eager; detection is the same)")
    confirm.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per target (default: 900); a factory can set its own: `make.compile_lint_timeout = 900`",
    )
    confirm.add_argument(
        "--memory-limit",
        type=float,
        metavar="GB",
        help="stop a target whose worker uses more memory (default: 70%% of the machine's, shared by -j workers)",
    )
    confirm.add_argument("--repro-dir", type=Path, metavar="DIR", help="write a script per confirmed break here")
    confirm.add_argument(
        "--deep",
        action="store_true",
        default=None,
        help="also the checks that compile each target again: a fullgraph=True run, recompiles with dynamic "
        "sizes, and whether each automatic fix removes its break (about twice the time)",
    )
    confirm.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="CI gate: compare breaks, graphs and recompiles per target and per line with FILE and fail only on "
        "what got worse (FILE is written when missing)",
    )
    confirm.add_argument(
        "--update-baseline",
        action="store_true",
        default=None,
        help="rewrite the --baseline FILE with this run",
    )
    confirm.add_argument(
        "--nested-graph-breaks",
        action="store_true",
        default=None,
        help="also compile each target with torch._dynamo.config.nested_graph_breaks (torch versions that have "
        "it) and show each break's cascade (frames run eagerly, resume functions) in both modes side by side",
    )
    measure = parser.add_argument_group(
        "--timing / --coverage", "measure eager against compiled per target (imply --confirm; backend inductor)"
    )
    measure.add_argument(
        "--timing", action="store_true", help="first call (compile + run), steady state, speed-up, new shapes, outputs"
    )
    measure.add_argument(
        "--coverage",
        action="store_true",
        help="also profile a steady step: time in compiled graphs, gaps, breaks ranked by cost (implies --timing)",
    )
    measure.add_argument(
        "--html",
        type=Path,
        metavar="DIR",
        help="write report.html and the profiler's Chrome trace there (implies --coverage)",
    )
    measure.add_argument(
        "--tolerance",
        type=float,
        nargs=2,
        metavar=("RTOL", "ATOL"),
        help="output agreement tolerance (default: torch.testing.assert_close's per-dtype defaults)",
    )
    measure.add_argument(
        "--compile-mode",
        choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"],
        help="torch.compile mode for --timing (reduce-overhead: CUDA graphs on a GPU)",
    )
    measure.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="intra-op CPU threads while measuring (default: torch's, one per core); on a shared or loaded "
        "machine --threads 1 is what can be measured",
    )
    parser.add_argument("--version", action="version", version=f"compile-lint {__version__}")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _torch_version(text: str) -> str:
    if versions.parse(text) is None:
        raise argparse.ArgumentTypeError(f'must look like "2.14", not {text!r}')
    return text


def _merge_cli(config: Config, args: argparse.Namespace) -> Config:
    if args.mode:
        config.mode = args.mode
    if args.torch_version:
        config.torch_version = args.torch_version
    if args.select:
        config.select = args.select
    if args.extend_select:
        config.extend_select = [*config.extend_select, *args.extend_select]
    if args.ignore:
        config.ignore = [*config.ignore, *args.ignore]
    if args.exclude is not None:
        config.exclude = args.exclude
    if args.extend_exclude:
        config.extend_exclude = [*config.extend_exclude, *args.extend_exclude]
    config.force_exclude = config.force_exclude or args.force_exclude
    return config


def run_check(args: argparse.Namespace, console: Output) -> int:
    if args.format == "full":
        args.format = "text"
    errors = output_console(stderr=True)
    problem = _destination_problem(args)
    if problem:
        errors.print(f"compile-lint: {problem}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_ERROR
    if args.output_file is None:
        return _run_check(args, console)
    rendered = io.StringIO()  # the file is replaced once the report is whole: a stopped run leaves the old one
    code = _run_check(args, output_console(rendered))
    try:
        atomic.write_text(args.output_file, rendered.getvalue())
    except OSError as error:
        message = f"compile-lint: cannot write {args.output_file}: {error.strerror or error}; the report follows"
        errors.print(message, markup=False, highlight=False, soft_wrap=True)
        console.file.write(rendered.getvalue())
        return EXIT_ERROR
    return code


def _destination_problem(args: argparse.Namespace) -> str:
    """Why -o, --html or --repro-dir cannot be written, found before any work."""
    destinations = (("-o", args.output_file, False), ("--html", args.html, True), ("--repro-dir", args.repro_dir, True))
    for option, path, folder in destinations:
        problem = atomic.destination_problem(path, option, folder) if path is not None else ""
        if problem:
            return problem
    return ""


def _run_check(args: argparse.Namespace, console: Output) -> int:
    config = _merge_cli(load_config(args.paths), args)
    if args.add_noqa:
        return run_add_noqa(args, config, console)
    args.confirm = args.confirm or args.confirm_notebooks or _measuring(args)
    if args.confirm or any(getattr(args, name) is not None for name in CONFIRM_ONLY):
        return run_confirm(args, config, console)
    if args.fix or args.unsafe_fixes or args.diff:
        return run_fixes(args, config, console)
    if args.show_regions:
        from compile_lint.reporters import text

        text.render_regions(console, build_project(args.paths, config))
        return EXIT_CLEAN
    jobs = args.jobs or os.cpu_count() or 1
    result = lint(args.paths, config, jobs=jobs, use_cache=not args.no_cache)
    findings = _with_fixes(result.findings, args, config)
    report(findings, result.files, args.format, console, args.statistics)
    _version_note(config)
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def _version_note(config: Config) -> None:
    """Name the torch version the findings are worded for when it is neither configured nor installed."""
    note = versions.assumed_note(config.torch_version)
    if note:
        output_console(stderr=True).print(f"compile-lint: {note}", style="yellow", markup=False, highlight=False)


def _with_fixes(findings: list[Finding], args: argparse.Namespace, config: Config) -> list[Finding]:
    """--show-fixes, --statistics: each finding an automatic fix removes gets `details["autofix"]` (safety and
    title), from the same plan --fix and --diff apply."""
    if not (args.show_fixes or args.statistics):
        return findings
    from compile_lint.fixes import runner

    return runner.with_autofixes(findings, args.paths, config)


def run_add_noqa(args: argparse.Namespace, config: Config, console: Output) -> int:
    from compile_lint.fixes import noqa

    if args.fix or args.unsafe_fixes or args.diff or args.confirm:
        message = "compile-lint: --add-noqa does not combine with --fix, --unsafe-fixes, --diff or --confirm"
        output_console(stderr=True).print(message, markup=False, highlight=False, soft_wrap=True)
        return EXIT_ERROR
    result = lint(args.paths, config, jobs=args.jobs or os.cpu_count() or 1, use_cache=not args.no_cache)
    added = noqa.add_noqa(result.findings)
    written, files = noqa.write(added)
    for problem in (*added.skipped, *added.errors):
        console.print(f"compile-lint: {problem}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    console.print(f"Added {written} noqa code{'s' * (written != 1)} in {files} file{'s' * (files != 1)}.")
    return EXIT_ERROR if added.errors else EXIT_CLEAN


def _measuring(args: argparse.Namespace) -> bool:
    """--timing and what implies it: --coverage, --html, --tolerance, --compile-mode, --threads."""
    return bool(args.timing or args.coverage or args.html or args.tolerance or args.compile_mode or args.threads)


def _measure_options(args: argparse.Namespace) -> MeasureOptions | None:
    from compile_lint.confirm.measure.measure import MeasureOptions

    if not _measuring(args):
        return None
    return MeasureOptions(
        coverage=bool(args.coverage or args.html),
        tolerance=args.tolerance,
        compile_mode=None if args.compile_mode in (None, "default") else args.compile_mode,
        html_dir=args.html,
        threads=args.threads,
    )


def run_fixes(args: argparse.Namespace, config: Config, console: Output) -> int:
    """--fix / --unsafe-fixes / --diff: plan in memory, write (or show the diff), then report what is left."""
    from compile_lint.fixes import runner

    allowed: set[Safety] = {"safe", "unsafe"} if args.unsafe_fixes else {"safe"}
    log = console if args.format == "text" and not args.diff else output_console(stderr=True)
    plan = runner.plan_fixes(args.paths, config, allowed)
    hint = f" ({runner.count(plan.withheld, 'more fix', 'es')} with --unsafe-fixes)" if plan.withheld else ""
    if args.diff:
        for file in plan.files:
            console.file.write(file.diff())
        console.file.flush()  # the diff before the summary on stderr
        fixes = sum(len(f.applied) for f in plan.files)
        runner.print_errors(plan, log.rich)
        files = runner.count(len(plan.files), "file")
        log.print(f"Would fix {runner.count(fixes, 'finding')} in {files}{hint}.", highlight=False)
        return EXIT_FINDINGS if plan.files or plan.errors else EXIT_CLEAN
    fixed = runner.write_all(plan, log.rich)
    runner.print_errors(plan, log.rich)
    log.print(f"Fixed {runner.count(fixed, 'finding')}{hint}.", highlight=False)
    result = lint(args.paths, config, jobs=args.jobs or os.cpu_count() or 1, use_cache=not args.no_cache)
    if _removed_unused_noqa(result.findings, log):
        result = lint(args.paths, config, jobs=args.jobs or os.cpu_count() or 1, use_cache=not args.no_cache)
    report(_with_fixes(result.findings, args, config), result.files, args.format, console, args.statistics)
    _version_note(config)
    return EXIT_FINDINGS if result.findings or plan.errors else EXIT_CLEAN


def _removed_unused_noqa(findings: list[Finding], log: Output) -> int:
    """--fix with TCL902 selected: take the unused codes out of their `# noqa` comments."""
    from compile_lint.fixes import noqa

    cleaned = noqa.remove_unused(findings)
    removed, _ = noqa.write(cleaned)
    for error in cleaned.errors:
        log.print(f"compile-lint: {error}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    if removed:
        log.print(f"Removed {removed} unused noqa code{'s' * (removed != 1)}.", highlight=False)
    return removed


def run_confirm(args: argparse.Namespace, config: Config, console: Output) -> int:
    from compile_lint.confirm.plan import UsageError
    from compile_lint.confirm.run.runner import default_memory_limit
    from compile_lint.confirm.session import ConfirmOptions, confirm
    from compile_lint.reporters import html, json_report, text, timing_text

    errors = output_console(stderr=True)
    problem = _confirm_usage_problem(args)
    if problem:
        errors.print(f"compile-lint: {problem}", markup=False, soft_wrap=True)
        return EXIT_ERROR
    jobs = args.jobs or os.cpu_count() or 1
    options = ConfirmOptions(
        targets=args.target or [],
        backend=args.backend or config.confirm.backend,
        timeout=args.timeout or config.confirm.timeout,
        shape=config.confirm.shape,
        memory_limit=args.memory_limit or config.confirm.memory_limit or default_memory_limit(jobs),
        max_auto_targets=args.max_auto_targets or config.confirm.max_auto_targets,
        auto_targets=bool(args.auto_targets or config.confirm.auto_targets),
        repro_dir=args.repro_dir,
        jobs=jobs,
        use_cache=not args.no_cache,
        measure=_measure_options(args),
        deep=bool(args.deep),
        nested_graph_breaks=bool(args.nested_graph_breaks),
    )
    progress = text.ConfirmProgress(errors.rich)
    try:
        run = confirm_with_notebooks if args.confirm_notebooks else confirm
        result = run(args.paths, config, options, progress)
    except UsageError as error:
        errors.print(f"compile-lint: {error}", markup=False, soft_wrap=True)
        return EXIT_ERROR
    finally:
        progress.stop()
    unchecked = result.unchecked
    if args.format == "json":
        console.file.write(json_report.render(result.findings, result.environment) + "\n")
    elif args.format == "text":
        text.render(console, result.findings, result.files, unchecked=len(unchecked))
        text.render_confirm_summary(console.rich, result.targets, result.findings)
        if options.measure is not None:
            timing_text.render(console.rich, result.targets)
        for script in result.repro_scripts:
            console.print(printable(f"wrote {script}"), markup=False, highlight=False)
    else:
        report(result.findings, result.files, args.format, console)
    for problem in result.output_errors:
        errors.print(f"compile-lint: {problem}", markup=False, soft_wrap=True)
    if args.html:
        try:
            page = html.write(args.html, result.targets, result.findings, result.environment)
        except OSError as error:  # the findings are printed above; only the page is lost
            errors.print(f"compile-lint: cannot write {args.html}: {error.strerror or error}", markup=False)
            return EXIT_ERROR
        (console if args.format == "text" else errors).print(printable(f"wrote {page}"), markup=False, highlight=False)
    if result.output_errors:
        return EXIT_ERROR
    if unchecked:
        if args.format != "text":  # the text summary lists them already
            names = ", ".join(f"{t.label} ({t.outcome})" for t in unchecked)
            errors.print(printable(f"compile-lint: not checked: {names}"), markup=False, soft_wrap=True)
        return EXIT_UNCHECKED
    if args.baseline is not None:
        return _gate(args, result, errors)
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def _gate(args: argparse.Namespace, result: ConfirmResult, log: Output) -> int:
    """--baseline: fail only on what got worse than the file; write it when missing or asked to."""
    from compile_lint.confirm.report import baseline

    sources = {}
    for path in {f.path for f in result.findings}:
        try:
            sources[path] = source_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            sources[path] = []
    current = baseline.snapshot(result.findings, result.targets, str(result.environment.get("torch", "")), sources)

    def say(message: str) -> None:
        log.print(f"compile-lint: baseline: {message}", markup=False, soft_wrap=True)

    if args.update_baseline or not args.baseline.exists():
        baseline.save(args.baseline, current)
        lines = len(current["lines"])
        say(f"wrote {args.baseline}: {len(current['regions'])} targets, {lines} lines with breaks or recompiles")
        return EXIT_CLEAN
    try:
        old = baseline.load(args.baseline)
    except baseline.BaselineError as error:
        say(str(error))
        return EXIT_ERROR
    comparison = baseline.compare(old, current)
    for note in comparison.notes:
        say(note)
    for change in comparison.better:
        say(f"better: {change}")
    for change in comparison.worse:
        say(f"worse: {change}")
    if comparison.worse:
        say(f"{len(comparison.worse)} worse than {args.baseline}: fix them, or accept them with --update-baseline")
        return EXIT_FINDINGS
    say(f"nothing worse than {args.baseline}" + (" (update it with --update-baseline)" if comparison.better else ""))
    return EXIT_CLEAN


def _confirm_usage_problem(args: argparse.Namespace) -> str:
    """Why these --confirm options cannot run, or ""."""
    if not args.confirm:
        given = [f"--{name.replace('_', '-')}" for name in CONFIRM_ONLY if getattr(args, name) is not None]
        return f"{', '.join(given)} only work{'s' * (len(given) == 1)} with --confirm: add --confirm"
    for name in ("timeout", "memory_limit", "max_auto_targets"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            return f"--{name.replace('_', '-')} must be greater than 0, got {value:g}"
    if args.update_baseline and args.baseline is None:
        return "--update-baseline needs --baseline FILE"
    if args.fix or args.unsafe_fixes or args.diff:
        return (
            "--fix, --unsafe-fixes and --diff do not combine with --confirm, which writes nothing "
            "and reports whether each fix removes its break: run them separately"
        )
    return ""


def confirm_with_notebooks(
    paths: list[str], config: Config, options: ConfirmOptions, progress: Progress
) -> ConfirmResult:
    """--confirm-notebooks: confirm with each notebook replaced by a module of its code cells, then put the
    findings and target labels back on the notebooks."""
    from compile_lint.confirm.session import confirm

    files = discover(paths, config)
    with notebooks.exported(files) as modules:
        notebook_of = {notebook: module for module, (notebook, _) in modules.items()}
        result = confirm([notebook_of.get(file, file) for file in files], config, options, progress)
    result.findings = sorted((notebooks.from_exported(f, modules) for f in result.findings), key=lambda f: f.sort_key)
    for target in result.targets:
        for module, (notebook, _) in modules.items():
            target.label = target.label.replace(module, notebook)
    return result


def report(findings: list[Finding], files: int, fmt: str, console: Output, statistics: bool = False) -> None:
    """Print the findings (or, with `statistics`, their count per code) on `console`, as `fmt`."""
    out = console.file
    if fmt == "json" and not statistics:
        from compile_lint.reporters import json_report

        out.write(json_report.render(findings) + "\n")
    elif fmt == "sarif" and not statistics:
        from compile_lint.reporters import sarif

        out.write(sarif.render(findings) + "\n")
    elif fmt == "junit" and not statistics:
        from compile_lint.reporters import junit

        out.write(junit.render(findings, files) + "\n")
    elif fmt == "github" and not statistics:
        from compile_lint.reporters import github

        out.write(github.render(findings) + "\n")
    else:
        from compile_lint.reporters import text  # rich tables, loaded only when printed

        if statistics and fmt == "json":
            out.write(json.dumps(text.statistics(findings), indent=2) + "\n")
        elif statistics:
            text.render_statistics(console, findings)
        elif fmt == "concise":
            text.render_concise(console, findings, files)
        else:
            text.render(console, findings, files)


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `timeout`, a cancelled CI job and supervisors send): unwinds like Ctrl-C, so every
    `finally` runs, --confirm's workers are stopped and no half-written report is left."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def output_console(file: IO[str] | None = None, stderr: bool = False) -> Output:
    """A console on `file` (default stdout); rich is imported only when it draws (see reporters.styled)."""
    return Output(file, stderr)


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    console = output_console()
    errors = output_console(stderr=True)
    try:
        if argv and argv[0] in ("rules", "rule"):
            from compile_lint import docs

            return docs.main(argv, console.rich)
        if argv and argv[0] == "demo":
            from compile_lint import demo

            return demo.main(argv[1:], console.rich, run=main)
        if argv and argv[0] == "lsp":
            from compile_lint import lsp

            return lsp.main(argv[1:])
        args = build_parser().parse_args(argv)
        code = run_check(args, console)
        return EXIT_CLEAN if args.exit_zero and code == EXIT_FINDINGS else code  # never EXIT_UNCHECKED
    except ConfigError as error:
        message = f"compile-lint: configuration error: {error}"
        errors.print(message, highlight=False, markup=False, soft_wrap=True)
        return EXIT_ERROR
    except KeyboardInterrupt as stop:
        terminated = isinstance(stop, Terminated)
        message = f"compile-lint: interrupted ({'SIGTERM' if terminated else 'SIGINT'}); nothing more was run"
        errors.print(message, highlight=False, markup=False, soft_wrap=True)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except ChildProcessError as error:  # a -j process killed (workers.WorkerDied): how, and what to do
        errors.print(f"compile-lint: {error}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_ERROR
    except BrokenPipeError:  # `compile-lint | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except SystemExit as exit_:  # argparse: usage errors and --help
        return exit_.code if isinstance(exit_.code, int) else EXIT_ERROR
    except Exception as error:
        message = f"compile-lint: internal error: {type(error).__name__}: {error}"
        errors.print(message, highlight=False, markup=False, soft_wrap=True)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
