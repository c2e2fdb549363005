"""``pypto-lsp check | validate | golden freeze | codegen | serve``.

Exit status: 0 all good, 1 some file failed or errored, 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .validate.config import Case, RunSettings

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 on usage errors, as we want
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pypto-lsp", description="Numerical debugger for PyPTO pass dumps.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    c = sub.add_parser("check", help="parse + static checks, no execution")
    c.add_argument("paths", nargs="+", metavar="PATH", help="dump files or folders (every *.py below, sorted)")
    c.add_argument("--json", action="store_true", help="machine-readable output")

    v = sub.add_parser("validate", help="run dumps against golden tensors")
    v.add_argument(
        "path",
        metavar="PATH",
        nargs="?",
        help="a dump file, a passes_dump/ folder or an output folder holding one (none: every case of --config)",
    )
    v.add_argument("--inputs", metavar="F", help="input bundle (.pt or .safetensors)")
    v.add_argument("--expected", metavar="F", help="expected-output bundle")
    v.add_argument("--config", metavar="F", help="a pypto-lsp.toml (default: found by walking up from PATH)")
    _add_run_setting_flags(v)
    v.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="worker processes for a folder (default: cores, when the work pays for them and a core is idle)",
    )
    v.add_argument("--cluster", metavar="ADDRESS", default=None, help="run the files on this Dask scheduler (docs/cluster.md)")
    v.add_argument("--no-cache", action="store_true", help="ignore and do not write the result cache")
    v.add_argument(
        "--no-localize",
        action="store_true",
        help="skip re-running the first divergent pass and the one before it with every value traced",
    )
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument("--differential", action="store_true", help="compare with the earliest dump on synthesized inputs, even with goldens")
    v.add_argument("--seed", type=int, default=None, metavar="N", help="seed of the synthesized inputs (default: the case's, else 0)")
    _add_ci_and_golden_arguments(sub, v)
    v.add_argument("--report", metavar="F", default=None, help="also write a self-contained HTML report (pass chart, table, error maps)")

    g = sub.add_parser("codegen", help="print the generated PyTorch script")
    g.add_argument("file", metavar="FILE")
    g.add_argument("--no-check-shapes", action="store_true", help="omit the shape/dtype assertions")
    g.add_argument("--entry", metavar="NAME", default=None)

    _add_memmap(sub)

    o = sub.add_parser("ops", help="every op the catalogue knows: whether it runs, a line of doc, where PyPTO defines it")
    o.add_argument("--json", action="store_true", help="machine-readable output (with the registry's commit and counts)")

    s = sub.add_parser("serve", help="run the language server")
    s.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio (debugging)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=2087)
    s.add_argument("--log-file", default=None, metavar="F")

    d = sub.add_parser("debug", help="the debug adapter (DAP) over a pass dump, on stdio (docs/debugger.md)")
    d.add_argument("--port", type=int, default=None, metavar="N", help="listen on a TCP port instead of stdio (0: any free port)")
    d.add_argument("--host", default="127.0.0.1")
    return p


def _add_run_setting_flags(validate: argparse.ArgumentParser) -> None:
    """A ``validate`` flag per run setting that declares one (``RunSettings``' metadata,
    :class:`validate.carriers.Flag`); not given: None, the case's value stays."""
    from .validate.carriers import carried
    from .validate.config import RunSettings

    for _, flag in carried(RunSettings, "flag"):
        validate.add_argument(flag.name, default=None, **flag.options)


def run_setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings the command line gives, by field name (flags not given left out);
    ValueError with the message after "pypto-lsp validate: " for a value that cannot be one."""
    from .validate.carriers import carried
    from .validate.config import RunSettings

    out: dict[str, Any] = {}
    for f, flag in carried(RunSettings, "flag"):
        value = getattr(args, flag.dest, None)
        if value is not None:
            out[f.name] = flag.convert(value, flag.name) if flag.convert is not None else value
    return out


def _write_json(doc: Any) -> None:
    """``doc`` on stdout as indented JSON in one write: ``json.dump`` writes it in ~20,000 pieces,
    each a system call when stdout is unbuffered (``PYTHONUNBUFFERED``, a CI log)."""
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(f"pypto-lsp {__version__}")
        return EXIT_OK
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "check":
        return cmd_check(args)
    if args.command == "validate":
        code = cmd_validate(args)
        _exit_if_runs_left(code)
        return code
    if args.command == "codegen":
        return cmd_codegen(args)
    if args.command == "golden":
        return cmd_golden(args)
    if args.command == "memmap":
        return int(args.func(args))
    if args.command == "ops":
        from .ir import op_registry

        print(json.dumps(op_registry.listing_json(), indent=1) if args.json else op_registry.listing_text())
        return EXIT_OK
    if args.command == "serve":
        from .server.app import serve

        return serve(tcp=args.tcp, host=args.host, port=args.port, log_file=args.log_file)
    if args.command == "debug":
        from .debug import serve as adapter

        code = adapter.serve_stdio() if args.port is None else adapter.serve_port(args.port, args.host)
        sys.stdout.flush()
        os._exit(code)  # a run thread stopped at a breakpoint must not keep the process alive
    return EXIT_USAGE


def _exit_if_runs_left(code: int) -> None:
    """A timed-out run that could not be stopped is still inside torch: leave without the
    interpreter's shutdown, which would abort ("terminate called without an active exception")."""
    engine = sys.modules.get("pypto_lsp.validate.engine")
    if engine is not None and engine.abandoned_runs():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------------- check


def _check_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            from .ir.passdiff import dump_order_key
            from .validate.config import is_dump_path

            # every dump below: *.py under a passes_dump* folder or starting with '# pypto.program:'
            found = (f for f in path.rglob("*.py") if f.is_file() and is_dump_path(f))
            files.extend(sorted(found, key=lambda f: (f.parent, dump_order_key(f.name))))
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(p)
    return files


def check_file(path: Path) -> list[Any]:
    from .ir.check import check_program
    from .ir.parser import parse_bytes, read_dump

    try:
        data = read_dump(path)  # never more than the size limit (+1 byte)
    except OSError as exc:
        from .ir.diagnostics import error

        return [error(None, "io", f"cannot read: {exc.strerror or exc}")]
    res = parse_bytes(data, str(path))
    diags = list(res.diagnostics)
    if res.program is not None:
        diags.extend(check_program(res.program))
        from .ir.memory import check_memory

        diags.extend(check_memory(res.program))  # capacity, bounds, tiles in pipe slots
    diags.sort(key=lambda d: (d.span.line, d.span.col))
    return diags


def cmd_check(args: argparse.Namespace) -> int:
    try:
        files = _check_files(args.paths)
    except FileNotFoundError as exc:
        print(f"pypto-lsp check: no such file or folder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    any_error = False
    out: list[dict[str, Any]] = []
    for f in files:
        diags = check_file(f)
        any_error = any_error or any(d.severity == "error" for d in diags)
        if args.json:
            out.append({"file": str(f), "diagnostics": [d.to_json() for d in diags]})
        else:
            for d in diags:
                print(d.format(str(f)))
    if args.json:
        _write_json({"files": out})
    elif not any_error:
        print(f"{len(files)} file(s) checked, no errors", file=sys.stderr)
    return EXIT_FAIL if any_error else EXIT_OK


# ---------------------------------------------------------------------- validate


def _say(text: str, file: Any = None) -> None:
    """Print a line that may hold a file name or a golden key: control characters (ESC, NUL)
    are shown as escapes, never sent to the terminal."""
    from .ir.diagnostics import printable

    print(printable(text), file=file)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6e}"


def _print_banner(fr: Any) -> None:
    _say(f"{'=' * 20} {Path(fr.file).stem} {'=' * 20}")
    for name, t in fr.tensors.items():
        _say(f"validate tensor: '{name}', max_abs_diff: {t.max_abs_diff:.6e}, pass: {t.passed}")
    if fr.error is not None:
        where = f" (line {fr.error.line})" if fr.error.line else ""
        _say(f"error [{fr.error.kind}]{where}: {fr.error.message}")
    elif fr.status == "ran":
        print("ran (no expected tensors to compare)")
    for h in (fr.memory or {}).get("hazards", []):
        label = "sanitizer" if h["kind"] in ("race", "uninitialised", "out-of-bounds") else "memory"
        _say(f"{label} {h['kind']} (line {h['line']}): {h['message']}")
        if h.get("related"):
            _say(f"  path: line {h['line']} -> " + " -> ".join(f"line {n}" for n in h["related"]))
    sys.stdout.flush()


def _unwritable(path: str | None) -> str | None:
    """Why an output file (--report, --junit, --sarif) could not be written, or None: checked
    before the run, so a typo costs nothing (the file itself is written after the run; missing
    folders on its way are made then)."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        return f"{p} is a folder"
    if p.exists():
        return None if os.access(p, os.W_OK) else f"{p} is not writable"
    above = p.parent
    while not above.exists() and above != above.parent:  # the nearest folder that exists
        if above.is_symlink():
            return f"{above} is a dangling link"
        above = above.parent
    if not above.is_dir():
        return f"{above} is not a folder"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"cannot create {p}: {above} is not writable"
    return None


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import config as cfg

    for label in ("report", "junit", "sarif"):  # before the run, not after it
        problem = _unwritable(getattr(args, label, None))
        if problem is not None:
            print(f"pypto-lsp validate: --{label}: {problem}", file=sys.stderr)
            return EXIT_USAGE
    if args.path is None:  # every [[cases]] entry of --config
        return cmd_validate_cases(args, cmd_validate)

    try:
        flags = run_setting_flags(args)  # --rtol, --timeout, --max-alloc ...: the run settings they give
    except ValueError as exc:
        print(f"pypto-lsp validate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        print(f"pypto-lsp validate: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return EXIT_USAGE
    if (args.inputs is None) != (args.expected is None):
        print("pypto-lsp validate: --inputs and --expected go together", file=sys.stderr)
        return EXIT_USAGE
    try:
        files = cfg.discover_dumps(args.path)
        case = None
        if args.inputs is None:
            case = cfg.find_case(files[0], args.config)  # without goldens: differential mode (below)
    except (FileNotFoundError, ValueError, cfg.ConfigError) as exc:
        _say(f"pypto-lsp validate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    config_file = args.config or (case.source if case is not None and case.source.endswith(".toml") else None)
    if config_file is not None:
        for w in cfg.config_warnings(Path(config_file)):
            print(w.format(), file=sys.stderr)
    from .ir import alloc_static as budget

    env_problem = budget.env_problem()
    if env_problem is not None and flags.get("max_alloc") is None and not (case and case.settings.max_alloc):  # the flag, the case win
        print(f"pypto-lsp validate: {env_problem}", file=sys.stderr)
        return EXIT_USAGE

    from .validate.cluster import ClusterError, open_cluster

    try:  # before torch loads: an unreachable scheduler is said within seconds
        executor = open_cluster(args.cluster, case)
    except ClusterError as exc:
        _say(f"pypto-lsp validate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for warning in getattr(executor, "warnings", ()):  # workers that get no file, and why
        _say(f"pypto-lsp validate: warning: {warning}", file=sys.stderr)
    # torch and the engine load here, after argument checks (fast failures stay fast)
    from .validate.folders import AUTO_JOBS, ResultCache, validate_files
    from .validate.process_setup import configure_process

    configure_process()
    # the case's settings, with what the command line says instead
    settings = (case.settings if case else cfg.RunSettings()).override(**flags)
    compared = _compared(
        "validate",
        args.path,
        case,
        settings,
        inputs=args.inputs,
        expected=args.expected,
        differential=args.differential and case is not None,
        seed=args.seed,
        use_cache=not args.no_cache,
    )
    if isinstance(compared, int):
        return compared
    if compared.note is not None:
        print(f"pypto-lsp validate: note: {compared.note}", file=sys.stderr)
    if compared.differential and not args.json:
        print(f"compared with: {compared.describe()}")
    inputs, expected = compared.inputs, compared.expected
    progress = sys.stderr.isatty() and not args.json
    done = [0]

    def on_result(fr: Any) -> None:
        done[0] += 1
        if not args.json:
            _print_banner(fr)
        if progress:
            from .ir.diagnostics import printable

            sys.stderr.write(f"\r[{done[0]}/{len(files)}] {printable(Path(fr.file).name)[:60]:<60}")
            sys.stderr.flush()

    t0 = time.perf_counter()
    report = validate_files(
        files,
        inputs,
        expected,
        settings=settings,
        jobs=args.jobs if args.jobs is not None else AUTO_JOBS,
        use_cache=not args.no_cache,
        on_result=on_result,
        bundle_paths=compared.bundle_paths,
        cache=ResultCache(case.cache_dir) if case is not None and case.cache_dir and not args.no_cache else None,
        executor=executor,
    )
    if executor is not None:
        executor.close()
    report.seconds = time.perf_counter() - t0
    if not args.no_localize:
        from .validate.localize import localize_report

        localize_report(report, inputs, **settings.values_kwargs())
    if progress:
        sys.stderr.write("\r" + " " * 80 + "\r")
    if args.report:
        from .formats.html_report import write_report

        try:
            write_report(args.report, report, inputs, expected, entry=settings.entry, timeout=settings.timeout_s)
        except OSError as exc:  # checked before the run; the disk may still fill up meanwhile
            print(f"pypto-lsp validate: --report: cannot write {args.report}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        _write_json({**report.to_json(), "compared_with": compared.to_json()})
    else:
        _print_summary(report)
        print(f"compared with: {compared.label}")
    return after_validate(args, report, compared.to_json(), EXIT_OK if report.ok else EXIT_FAIL)


def _print_summary(report: Any) -> None:
    _say("")
    _say(f"{'file':<48} {'status':<6} {'max|Δ|':>12} {'seconds':>8}")
    for fr in report.files:
        mark = "" if not fr.cached else " (cached)"
        _say(f"{Path(fr.file).name[:48]:<48} {fr.status:<6} {_fmt(fr.max_abs_diff()):>12} {fr.seconds:>8.3f}{mark}")
    s = report.summary()
    ran = f", {s['ran']} ran" if s["ran"] else ""  # a returned value run without a comparison: only then
    _say(f"\n{s['pass']} pass, {s['fail']} fail, {s['error']} error{ran} in {s['seconds']:.2f} s")
    fd = report.first_divergent
    if fd is not None:
        hazards = (fd.memory or {}).get("hazards", [])
        line = fd.error.line if fd.error and fd.error.line else (hazards[0]["line"] if hazards else None)
        where = f":{line}" if line else ""
        _say(f"first divergent pass: {Path(fd.file).name}{where} ({fd.status})")
        if hazards:
            _say(f"  {len(hazards)} memory or sanitizer finding(s); first: line {hazards[0]['line']}: {hazards[0]['message']}")
        i = report.files.index(fd)
        if i > 0 and report.files[i - 1].status in ("pass", "ran"):
            from .ir.parser import read_dump
            from .ir.passdiff import changed_blocks, pass_name

            try:  # never more than the size limit of either
                prev_text, text = (read_dump(f.file).decode("utf-8", "replace") for f in (report.files[i - 1], fd))
                blocks = changed_blocks(prev_text, text)
            except OSError:
                blocks = []
            if blocks:
                where_changed = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in blocks)
                _say(f"  {pass_name(Path(fd.file))} changed lines {where_changed} (addresses and comments ignored): look there first")
        v = report.first_differing_value
        if v is not None:
            _say(f"  {Path(fd.file).name}:{v.line}: {v.describe(Path(report.files[i - 1].file).name)}")
            for r in v.related:  # the next candidates
                _say(f"    also {Path(fd.file).name}:{r.line}: '{r.name}', {r.detail}")
    else:
        print("first divergent pass: none")


# ---------------------------------------------------------------------- golden freeze, validate --config, --junit/--sarif


def _add_ci_and_golden_arguments(sub: Any, validate: argparse.ArgumentParser) -> None:
    """``validate --junit/--sarif`` and the ``golden`` command."""
    validate.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (a testsuite per dump folder)")
    validate.add_argument("--sarif", metavar="FILE", help="also write a SARIF 2.1.0 log (code scanning)")
    g = sub.add_parser("golden", help="golden bundles: 'freeze' the differential reference of a folder")
    gs = g.add_subparsers(dest="golden_command", parser_class=sub._parser_class)
    f = gs.add_parser("freeze", help="write the synthesized inputs and the earliest dump's outputs as a golden bundle + config entry")
    f.add_argument("folder", metavar="FOLDER", help="a passes_dump/ folder or an output folder holding one")
    f.add_argument("--out", metavar="DIR", default=None, help="bundle folder (default: golden/ beside passes_dump/)")
    f.add_argument("--config", metavar="F", default=None, help="the pypto-lsp.toml to add the case to (default: beside the bundle folder)")
    f.add_argument("--seed", type=int, default=None, metavar="N")
    f.add_argument("--entry", metavar="NAME", default=None)
    f.add_argument("--force", action="store_true", help="overwrite an existing bundle")


def _compared(command: str, path: str, case: Case | None, settings: RunSettings, **how: Any) -> Any:
    """What ``path`` is compared with (:func:`validate.reference.resolve`), or the exit status after
    saying why: 2 when a bundle cannot be loaded or inputs cannot be synthesized, 1 when the
    earliest dump cannot be the reference."""
    from .validate import differential as dif
    from .validate.reference import resolve

    try:
        return resolve(path, case, settings, **how)
    except dif.DifferentialError as exc:
        print(f"pypto-lsp {command}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except dif.GoldenError as exc:  # a bundle that cannot be loaded, inputs that cannot be synthesized
        _say(f"pypto-lsp {command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def cmd_golden(args: argparse.Namespace) -> int:
    if args.golden_command != "freeze":
        print("pypto-lsp golden: a subcommand is needed: freeze FOLDER", file=sys.stderr)
        return EXIT_USAGE
    from .validate import config as cfg

    try:
        files = cfg.discover_dumps(args.folder)
        folder = cfg.dump_folder(files[0])
        files = cfg.discover_dumps(folder)
        case = cfg.find_case(folder)
    except (FileNotFoundError, ValueError, cfg.ConfigError) as exc:
        print(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else folder.parent / "golden"
    if not args.force and ((out / "inputs.pt").exists() or (out / "expected.pt").exists()):
        print(f"pypto-lsp golden freeze: {out} already holds a bundle (--force overwrites it)", file=sys.stderr)
        return EXIT_USAGE
    from .validate.golden import GoldenError, save_golden
    from .validate.process_setup import configure_process

    configure_process()
    settings = case.settings.override(entry=args.entry)
    compared = _compared("golden freeze", str(folder), case, settings, differential=True, seed=args.seed, use_cache=False)
    if isinstance(compared, int):
        return compared
    ref = compared.reference
    assert ref is not None
    config = Path(args.config) if args.config else None
    written = config or out.parent / "pypto-lsp.toml"
    # the same seed and table in the new case: `validate --differential` still synthesizes the same inputs
    extra: dict[str, Any] = {"seed": ref.seed}
    if case.generate:
        extra["generate"] = dict(case.generate)
    try:
        save_golden(
            out,
            ref.inputs,
            ref.expected,
            dumps=folder,
            entry=settings.entry,
            rtol=settings.rtol,
            atol=settings.atol,
            config=config,
            extra=extra,
        )
    except GoldenError as exc:  # the entry cannot be added to that config: nothing written
        _say(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        _say(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_FAIL
    print(f"froze {ref.describe()}")
    print(f"  inputs   {out / 'inputs.pt'}: {', '.join(sorted(ref.inputs))}")
    print(f"  expected {out / 'expected.pt'}: {', '.join(sorted(ref.expected)) or '(none: the entry writes no parameter)'}")
    print(f"  [[cases]] entry added to {written}")
    return EXIT_OK


def cmd_validate_cases(args: argparse.Namespace, validate_one: Any) -> int:
    """``validate --config F`` without PATH: every case of F, a summary row per case, exit status over all."""
    import contextlib
    import io
    import time

    from .formats.ci_formats import case_labels
    from .validate import config as cfg

    if args.config is None:
        print("pypto-lsp validate: give a PATH, or --config F to validate every case of F", file=sys.stderr)
        return EXIT_USAGE
    if args.inputs is not None or args.expected is not None:
        print("pypto-lsp validate: --inputs/--expected go with a PATH, not with every case of --config", file=sys.stderr)
        return EXIT_USAGE
    config = Path(args.config)
    try:
        cases = cfg.cases_in(config)
        labels = case_labels(config, cases)
    except (cfg.ConfigError, OSError, ValueError) as exc:
        _say(f"pypto-lsp validate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not cases:
        print(f"pypto-lsp validate: {config} has no [[cases]]", file=sys.stderr)
        return EXIT_USAGE
    collected: list[tuple[str, Any, dict[str, Any]]] = []
    rows: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for i, (case, label) in enumerate(zip(cases, labels, strict=True), 1):
        path = str(case.dumps)
        if not args.json:
            print(f"\n{'#' * 20} case {i}/{len(cases)}: {label} ({path}) {'#' * 20}", flush=True)
        elif sys.stderr.isatty():
            print(f"[{i}/{len(cases)}] {label}", file=sys.stderr, flush=True)
        ns = argparse.Namespace(**{**vars(args), "path": path, "junit": None, "sarif": None, "collect": []})
        if args.json:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = validate_one(ns)
            text = buf.getvalue().strip()
            doc = json.loads(text) if text.startswith("{") else None
        else:
            rc = validate_one(ns)
            doc = None
        row: dict[str, Any] = {"case": label, "path": path, "exit": rc}
        if ns.collect:
            _, report, compared = ns.collect[0]
            collected.append((path, report, compared))
            fd = report.first_divergent
            row.update(report.summary(), first_divergent=Path(fd.file).name if fd else None, compared_with=compared.get("label"))
        else:
            row.update(problem="did not run (see the message above)" if not args.json else "did not run (see stderr)")
        rows.append(row)
        docs.append({"case": label, "path": path, "exit": rc, **(doc or {})})
    status = EXIT_OK
    if any(r["exit"] == EXIT_USAGE for r in rows):
        status = EXIT_USAGE
    elif any(r["exit"] != EXIT_OK for r in rows):
        status = EXIT_FAIL
    if args.json:
        _write_json({"cases": docs, "summary": {"cases": len(rows), "exit": status, "seconds": round(time.perf_counter() - t0, 6)}})
    else:
        print(f"\n{'case':<28} {'pass':>5} {'fail':>5} {'error':>5} {'ran':>5}  {'first divergent':<40} {'compared with':<26} exit")
        for r in rows:
            if "problem" in r:
                print(f"{r['case'][:28]:<28} {'-':>5} {'-':>5} {'-':>5} {'-':>5}  {r['problem']:<67} {r['exit']}")
                continue
            fd = r["first_divergent"] or "none"
            print(
                f"{r['case'][:28]:<28} {r['pass']:>5} {r['fail']:>5} {r['error']:>5} {r['ran']:>5}  {fd[:40]:<40} {str(r['compared_with'])[:26]:<26} {r['exit']}"
            )
        bad = [r["case"] for r in rows if r["exit"] != EXIT_OK]
        print(
            f"\n{len(rows)} case(s), {len(rows) - len(bad)} ok"
            + (f"; not ok: {', '.join(bad)}" if bad else "")
            + f" in {time.perf_counter() - t0:.2f} s"
        )
    if args.junit or args.sarif:
        return write_ci_outputs(args, collected, status)
    return status


def after_validate(args: argparse.Namespace, report: Any, compared: dict[str, Any], status: int) -> int:
    """After one folder's validation: collect it (``validate --config``) or write --junit/--sarif."""
    collect = getattr(args, "collect", None)
    if collect is not None:
        collect.append((args.path, report, compared))
        return status
    if getattr(args, "junit", None) or getattr(args, "sarif", None):
        return write_ci_outputs(args, [(args.path, report, compared)], status)
    return status


def write_ci_outputs(args: argparse.Namespace, runs: list[tuple[str, Any, dict[str, Any]]], status: int) -> int:
    from .formats import ci_formats

    try:
        if getattr(args, "junit", None):
            ci_formats.write_junit(args.junit, runs)
        if getattr(args, "sarif", None):
            ci_formats.write_sarif(args.sarif, runs)
    except OSError as exc:
        print(f"pypto-lsp validate: cannot write a report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return status


# ---------------------------------------------------------------------- codegen


def cmd_codegen(args: argparse.Namespace) -> int:
    from .ir import diagnostics as D
    from .ir.parser import parse_bytes, read_dump

    path = Path(args.file)
    if not path.is_file():
        print(f"pypto-lsp codegen: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    try:
        data = read_dump(path)
    except OSError as exc:
        print(f"pypto-lsp codegen: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    res = parse_bytes(data, str(path))
    if res.program is None or res.errors:
        for d in res.errors:
            print(d.format(str(path)), file=sys.stderr)
        return EXIT_FAIL
    from .exec.codegen import CodegenError, generate

    try:
        gen = generate(res.program, check_shapes=not args.no_check_shapes, entry=args.entry)
    except CodegenError as exc:
        d = D.error(exc.span, "codegen", str(exc))
        print(d.format(str(path)), file=sys.stderr)
        return EXIT_FAIL
    sys.stdout.write(gen.source)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


def _add_memmap(sub: Any) -> None:
    m = sub.add_parser("memmap", help="each core's memory over statement order (live ranges, overlaps in red)")
    m.add_argument("file", metavar="FILE", help="a pass dump (from InitMemRef on)")
    m.add_argument("--html", metavar="F", default=None, help="write a self-contained HTML picture")
    m.add_argument("--json", action="store_true", help="print the map's data")
    m.add_argument("--run", action="store_true", help="also run the dump with its case's goldens and add the sanitizer's findings")
    m.add_argument("--config", metavar="F", default=None, help="a pypto-lsp.toml (default: found by walking up from FILE)")
    m.add_argument("--backend", metavar="NAME", default=None, help="memory capacities of this PyPTO backend (910B, 950)")
    m.add_argument("-v", "--verbose", action="store_true", help="print the overlaps also with --html")
    m.set_defaults(func=cmd_memmap)


def cmd_memmap(args: Any) -> int:
    """The ``memmap`` subcommand: 0 drawn (red or not), 2 a file that cannot be read or parsed."""
    from .formats import memmap_page
    from .ir.memmap import memory_map_text
    from .ir.memory import BackendError, Hazard, capacities
    from .ir.parser import MAX_BYTES, read_dump

    problem = _unwritable(args.html)  # before the work, as validate --report
    if problem is not None:
        print(f"pypto-lsp memmap: --html: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        capacities(args.backend)
    except BackendError as exc:
        print(f"pypto-lsp memmap: --backend: {exc}", file=sys.stderr)
        return EXIT_USAGE
    path = Path(args.file)
    try:
        raw = read_dump(path)  # never more than the limit check and validate apply (+1 byte)
        if len(raw) > MAX_BYTES:
            raise ValueError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, the most a pass dump may be; not read")
        text = raw.decode("utf-8-sig")
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        _say(f"pypto-lsp memmap: {exc}", file=sys.stderr)
        return EXIT_USAGE
    findings: list[Hazard] = []
    note = None
    if args.run:
        findings, note = memmap_page.run_findings(path, args.config)
    data = memory_map_text(text, findings, filename=str(path), backend=args.backend)
    if note:
        data["note"] = note
    if data.get("error"):
        print(f"pypto-lsp memmap: {path}: {data['error']}", file=sys.stderr)
        return 2
    if args.html:
        try:
            out = Path(args.html)
            out.parent.mkdir(parents=True, exist_ok=True)  # missing folders on its way, as --report
            out.write_text(memmap_page.render_html(data, path.name), encoding="utf-8")
        except OSError as exc:
            _say(f"pypto-lsp memmap: --html: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        print(json.dumps(data, indent=1))
    elif not args.html or args.verbose:
        c = data["counts"]
        print(f"{path}: {c['strips']} strip(s), {c['bars']} placed value(s), {c['overlaps']} overlap(s), {c['findings']} finding(s)")
        for st in data["strips"]:
            for o in st["overlaps"]:
                print(
                    f"  {st['function']} {st['space']}: '{o['name']}' (line {o['line']}) is still read at line {o['end']} but "
                    f"'{o['other_name']}' is written on its bytes [{o['start']}, {o['stop']}) at line {o['other_line']}"
                )
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr)
    return 0
