"""Command line: wires config, engine and reporters together; no analysis happens here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from compile_lint import __version__
from compile_lint.config import MODES, Config, ConfigError, load_config
from compile_lint.engine import build_project, lint
from compile_lint.finding import Finding
from compile_lint.fixes.codemods import Safety
from compile_lint.reporters import github, json_report, sarif, text

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> list[str]:
    return [code.strip().upper() for code in value.split(",") if code.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compile-lint",
        description="Find torch.compile graph breaks and recompiles before you profile. "
        "Also: `compile-lint rules` lists the rules, `compile-lint rule TCL101` explains one.",
    )
    parser.add_argument("paths", nargs="*", default=["."], help="files or folders to lint (default: .)")
    formats = ["text", "json", "sarif", "github"]
    parser.add_argument("--format", choices=formats, default="text", help="output format")
    parser.add_argument("--select", type=_codes, help="only report codes with these prefixes, e.g. TCL1,TCL201")
    parser.add_argument("--ignore", type=_codes, help="never report codes with these prefixes")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="lint files in N processes (0: one per core)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the summary cache")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings (errors still exit 2)")
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
        "--show-regions",
        action="store_true",
        help="list every compiled region and how each reached function is reached",
    )
    confirm = parser.add_argument_group("--confirm", "run the compiled regions under real Dynamo (executes your code)")
    confirm.add_argument("--confirm", action="store_true", help="give every finding a status and find missed breaks")
    confirm.add_argument(
        "--target",
        action="append",
        metavar="MOD:FACTORY",
        help="a zero-argument factory returning (fn, args[, kwargs]) or a list of them; repeatable",
    )
    confirm.add_argument("--backend", help="torch.compile backend (default: eager; detection is the same)")
    confirm.add_argument("--timeout", type=float, help="seconds per target (default: 120)")
    confirm.add_argument("--repro-dir", type=Path, metavar="DIR", help="write a script per confirmed break here")
    confirm.add_argument(
        "--deep",
        action="store_true",
        help="also the checks that compile each target again: a fullgraph=True run, recompiles with dynamic "
        "sizes, and whether each automatic fix removes its break (about twice the time)",
    )
    parser.add_argument("--version", action="version", version=f"compile-lint {__version__}")
    return parser


def _merge_cli(config: Config, args: argparse.Namespace) -> Config:
    if args.mode:
        config.mode = args.mode
    if args.select:
        config.select = args.select
    if args.ignore:
        config.ignore = [*config.ignore, *args.ignore]
    return config


def run_check(args: argparse.Namespace, console: Console) -> int:
    config = _merge_cli(load_config(args.paths), args)
    if args.confirm or args.target or args.repro_dir or args.backend or args.deep or args.timeout is not None:
        return run_confirm(args, config, console)
    if args.fix or args.unsafe_fixes or args.diff:
        return run_fixes(args, config, console)
    if args.show_regions:
        text.render_regions(console, build_project(args.paths, config))
        return EXIT_CLEAN
    jobs = args.jobs or os.cpu_count() or 1
    result = lint(args.paths, config, jobs=jobs, use_cache=not args.no_cache)
    report(result.findings, result.files, args.format, console)
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def run_fixes(args: argparse.Namespace, config: Config, console: Console) -> int:
    """--fix / --unsafe-fixes / --diff: plan in memory, write (or show the diff), then report what is left."""
    from compile_lint.fixes import runner

    allowed: set[Safety] = {"safe", "unsafe"} if args.unsafe_fixes else {"safe"}
    log = console if args.format == "text" and not args.diff else Console(stderr=True)
    plan = runner.plan_fixes(args.paths, config, allowed)
    hint = f" ({runner.count(plan.withheld, 'more fix', 'es')} with --unsafe-fixes)" if plan.withheld else ""
    if args.diff:
        for file in plan.files:
            sys.stdout.write(file.diff())
        sys.stdout.flush()  # the diff before the summary on stderr
        fixes = sum(len(f.applied) for f in plan.files)
        runner.print_errors(plan, log)
        files = runner.count(len(plan.files), "file")
        log.print(f"Would fix {runner.count(fixes, 'finding')} in {files}{hint}.", highlight=False)
        return EXIT_FINDINGS if plan.files or plan.errors else EXIT_CLEAN
    fixed = runner.write_all(plan, log)
    runner.print_errors(plan, log)
    log.print(f"Fixed {runner.count(fixed, 'finding')}{hint}.", highlight=False)
    result = lint(args.paths, config, jobs=args.jobs or os.cpu_count() or 1, use_cache=not args.no_cache)
    report(result.findings, result.files, args.format, console)
    return EXIT_FINDINGS if result.findings or plan.errors else EXIT_CLEAN


def run_confirm(args: argparse.Namespace, config: Config, console: Console) -> int:
    from compile_lint.confirm.plan import UsageError
    from compile_lint.confirm.session import ConfirmOptions, confirm

    errors = Console(stderr=True)
    if not args.confirm or (args.timeout is not None and args.timeout <= 0):
        message = "compile-lint: --target, --backend, --timeout (> 0), --repro-dir and --deep need --confirm"
        errors.print(message, soft_wrap=True)
        return EXIT_ERROR
    if args.fix or args.unsafe_fixes or args.diff:
        message = (
            "compile-lint: --fix, --unsafe-fixes and --diff do not combine with --confirm, which writes nothing "
            "and reports whether each fix removes its break: run them separately"
        )
        errors.print(message, soft_wrap=True)
        return EXIT_ERROR
    options = ConfirmOptions(
        targets=args.target or [],
        backend=args.backend or config.confirm.backend,
        timeout=args.timeout or config.confirm.timeout,
        shape=config.confirm.shape,
        repro_dir=args.repro_dir,
        jobs=args.jobs or os.cpu_count() or 1,
        use_cache=not args.no_cache,
        deep=args.deep,
    )
    progress = text.ConfirmProgress(errors)
    try:
        result = confirm(args.paths, config, options, progress)
    except UsageError as error:
        errors.print(f"compile-lint: {error}", markup=False, soft_wrap=True)
        return EXIT_ERROR
    finally:
        progress.stop()
    if args.format == "json":
        print(json_report.render(result.findings, result.environment))
    else:
        report(result.findings, result.files, args.format, console)
    if args.format == "text":
        text.render_confirm_summary(console, result.targets, result.findings)
        for script in result.repro_scripts:
            console.print(f"wrote {script}", markup=False, highlight=False)
    remaining = [f for f in result.findings if f.status in ("confirmed", "dynamic-only", "not-reproduced")]
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def report(findings: list[Finding], files: int, fmt: str, console: Console) -> None:
    if fmt == "json":
        print(json_report.render(findings))
    elif fmt == "sarif":
        print(sarif.render(findings))
    elif fmt == "github":
        print(github.render(findings))
    else:
        text.render(console, findings, files)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    console = Console()
    errors = Console(stderr=True)
    try:
        if argv and argv[0] in ("rules", "rule"):
            from compile_lint import docs

            return docs.main(argv, console)
        args = build_parser().parse_args(argv)
        code = run_check(args, console)
        return EXIT_CLEAN if args.exit_zero and code == EXIT_FINDINGS else code
    except ConfigError as error:
        message = f"compile-lint: configuration error: {error}"
        errors.print(message, highlight=False, markup=False, soft_wrap=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
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
