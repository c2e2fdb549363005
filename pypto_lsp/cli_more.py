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
