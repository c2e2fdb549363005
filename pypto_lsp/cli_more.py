"""The command-line parts of differential mode and CI: ``golden freeze``, ``validate --junit/--sarif``.

Kept apart from :mod:`.cli` (which only registers and calls them). No torch at import time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_arguments(sub: Any, validate: argparse.ArgumentParser) -> None:
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
    from .validate import differential as dif
    from .validate.engine import configure_torch
    from .validate.golden import GoldenError, save_golden

    configure_torch()
    entry = args.entry if args.entry is not None else case.entry
    try:
        ref = dif.for_case(files, case, entry=entry, timeout=case.timeout_s, use_cache=False, seed=args.seed)
    except dif.GenerateError as exc:
        print(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except dif.DifferentialError as exc:
        print(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_FAIL
    config = Path(args.config) if args.config else None
    try:
        save_golden(out, ref.inputs, ref.expected, dumps=folder, entry=entry, rtol=case.rtol, atol=case.atol, config=config)
    except (GoldenError, OSError) as exc:
        print(f"pypto-lsp golden freeze: {exc}", file=sys.stderr)
        return EXIT_FAIL
    written = config or out.parent / "pypto-lsp.toml"
    # the same seed and table in the new case: `validate --differential` still synthesizes the same inputs
    extra = [f"seed = {ref.seed}"]
    if case.generate:
        extra += ["", "[cases.generate]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in case.generate.items()]
    with written.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(extra) + "\n")
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

    from .validate import config as cfg
    from .validate.ci_formats import case_labels

    if args.config is None:
        print("pypto-lsp validate: give a PATH, or --config F to validate every case of F", file=sys.stderr)
        return EXIT_USAGE
    if args.inputs is not None or args.expected is not None:
        print("pypto-lsp validate: --inputs/--expected go with a PATH, not with every case of --config", file=sys.stderr)
        return EXIT_USAGE
    config = Path(args.config)
    try:
        cases = cfg._cases_in(config)
        labels = case_labels(config, cases)
    except (cfg.ConfigError, OSError, ValueError) as exc:
        print(f"pypto-lsp validate: {exc}", file=sys.stderr)
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
        json.dump(
            {"cases": docs, "summary": {"cases": len(rows), "exit": status, "seconds": round(time.perf_counter() - t0, 6)}},
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
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


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise ValueError(f"cannot write {v!r} as TOML")


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
    from .validate import ci_formats

    try:
        if getattr(args, "junit", None):
            ci_formats.write_junit(args.junit, runs)
        if getattr(args, "sarif", None):
            ci_formats.write_sarif(args.sarif, runs)
    except OSError as exc:
        print(f"pypto-lsp validate: cannot write a report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return status
