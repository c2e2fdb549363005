"""How pypto-lsp meets a damaged dump: real dumps edited at random, each run once, the endings counted.

    python benchmarks/bench_damaged_dumps.py [FOLDER] [--edits op,number,name] [--seeds 1,2,3] [--per-dump 4]

A pass that goes wrong, or a hand edit, leaves a dump that is still Python: one op where another
was, one integer changed, one name where another was. pypto-lsp should then say what is wrong on
the line, in the IR's terms: best before the run (a static finding), else when the run meets it.
What it should never do is end in Python's or torch's own words (``'int' object has no attribute
'dim'``, ``The size of tensor a (16) must match the size of tensor b (8)``), which name neither the
op nor the value, or crash.

FOLDER holds cases (a ``passes_dump`` folder beside ``tensors.pt``/``expected.pt`` or a
``golden`` folder); by default ``../shared/fixtures-coverage``, else the repository's
``examples``. Four dumps of each case are edited, ``--per-dump`` times per seed and kind of edit:

* ``op``: a ``pl.``/``pld.`` op call's name swapped for any op of the catalogue;
* ``number``: an integer inside an op call's operands set to n+1, n-1, 2n, 0, -1, n+64 or 2**20;
* ``name``: a name an op call reads swapped for another name of the same function;
* ``drop``: a statement of a function body left out (a pass that lost one);
* ``swap``: a statement swapped with the next one at its depth (a pass that reordered two);
* ``type``: one dim of a tensor's or tile's annotation changed (n+1, n-1, 2n, 1), or its dtype
  (a pass that typed a value wrong).

Per kind it prints how the runs ended: a static finding, a pass or a fail (the numbers changed, or
did not), an error of the run in our words, an error in Python's or torch's words (recognised by
their phrasings), a crash (an exception out of ``run_text``); then each of the last two with its
case, dump, edit and message. And whether what was said is where the edit is: the static findings
the edit brought (those of the unedited dump aside: "as before" counts the runs with none new) that
cover the edited line, and the run errors on it (``--elsewhere N`` lists N of the others per
kind: a deadlock is met where a task waits, a shape where it is read, so not every one is
wrong; a dropped statement leaves its line empty, so ``-`` there). Figures, no asserts.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
COVERAGE = ROOT.parent / "shared" / "fixtures-coverage"

# how Python and torch word what they raise (our own messages name the op or the value)
PYTHON_WORDS = (
    "must match the size of tensor",
    "cannot be converted to Scalar",
    "object has no attribute",
    "is invalid for input of size",
    "Trying to create tensor with negative dimension",
    "tuple index out of range",
    "KeyError",
    "int() argument must be",
    "cannot be interpreted as an integer",
    "not associated with a value",
    "duplicate argument",
    "only one element tensors",
    "Boolean value of Tensor",
    "too many indices",
    "The shape of the mask",
    "unsupported operation",
    "integer modulo by zero",
    "integer division or modulo by zero",
    "Dimension size must be non-negative",
    "The expanded size",
    "only integer tensors of a single element",
    "has no len()",
    "does not support item assignment",
    "only one dimension can be inferred",
    "index out of range in self",
    "is out of bounds for dimension",
    "mat1 and mat2 shapes",
    "not implemented for",
    "missing 1 required positional argument",
    "missing 2 required positional arguments",
)
_CALL = re.compile(r"\b(?:pl|pld)\.[\w.]+\(([^\n]*)\)")
_OP = re.compile(r"\bpl\.(?:tile|tensor|system|array)\.\w+(?=\()|\bpld\.\w+\.\w+(?=\()|\bpld\.\w+(?=\()")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
_NAME = re.compile(r"(?<![\w.'\"=])([a-z_][a-z0-9_]*)(?![\w(=.])")
_ASSIGNED = re.compile(r"^ +([a-z_][a-z0-9_]*)(?::[^=\n]+)? = ", re.M)


def cases(folder: Path) -> list[tuple[Path, Path, Path]]:
    """(case, inputs, expected) of every case under ``folder``."""
    out = []
    for case in sorted({d.parent for d in folder.rglob("passes_dump")}):
        if (case / "tensors.pt").exists():
            out.append((case, case / "tensors.pt", case / "expected.pt"))
        elif (case / "golden" / "inputs.pt").exists():
            out.append((case, case / "golden" / "inputs.pt", case / "golden" / "expected.pt"))
    return out


def _operand_spots(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    spots = []
    for line in re.finditer(r"^ +[^#\n]*$", text, re.M):
        for call in _CALL.finditer(line.group(0)):
            base = line.start() + call.start(1)
            spots += [(base + m.start(), base + m.end()) for m in pattern.finditer(call.group(1))]
    return spots


def edit(kind: str, text: str, rnd: random.Random, ops: tuple[str, ...]) -> tuple[str, str, int] | None:
    """``text`` with one edit of ``kind``, the edit in words and its line; None when there is nothing to edit."""
    if kind == "op":
        found = list(_OP.finditer(text))
        if not found:
            return None
        m, op = rnd.choice(found), rnd.choice(ops)
        line = text.count("\n", 0, m.start()) + 1
        return (
            text[: m.start()] + ("" if op.startswith("pld.") else "pl.") + op + text[m.end() :],
            f"{m.group(0)} -> {op} on line {line}",
            line,
        )
    if kind == "number":
        spots = _operand_spots(text, _NUMBER)
        if not spots:
            return None
        a, z = rnd.choice(spots)
        n = int(text[a:z])
        new = rnd.choice([n + 1, n - 1, n * 2, 0, -1, n + 64, 1 << 20])
        line = text.count(chr(10), 0, a) + 1
        return text[:a] + str(new) + text[z:], f"{n} -> {new} on line {line}", line
    if kind in ("drop", "swap"):
        return _statement_edit(kind, text, rnd)
    if kind == "type":
        return _type_edit(text, rnd)
    spots = _operand_spots(text, _NAME)
    if not spots:
        return None
    a, z = rnd.choice(spots)
    head = text.rfind("    def ", 0, a)
    head = max(head, 0)
    params = re.findall(r"(\w+): pl", text[head : text.find("\n", head)])
    pool = sorted({*(m.group(1) for m in _ASSIGNED.finditer(text[head:a])), *params} - {text[a:z], "self", "pl", "pld"})
    if not pool:
        return None
    new_name = rnd.choice(pool)
    line = text.count(chr(10), 0, a) + 1
    return text[:a] + new_name + text[z:], f"{text[a:z]} -> {new_name} on line {line}", line


_STATEMENT = re.compile(r"^( {8,})(?![#\s])(?!(?:for|while|if|else|elif|with|return|def)\b)[^\n]*$")


def _statement_edit(kind: str, text: str, rnd: random.Random) -> tuple[str, str, int] | None:
    """``text`` with one simple statement of a function body left out (``drop``, the line emptied
    so that every other line keeps its number) or swapped with the next line at its depth
    (``swap``); the edit's line."""
    lines = text.split("\n")
    spots = [i for i, ln in enumerate(lines) if _STATEMENT.match(ln)]
    if kind == "swap":
        spots = [i for i in spots if i + 1 < len(lines) and _STATEMENT.match(lines[i + 1]) and _indent(lines[i]) == _indent(lines[i + 1])]
    if not spots:
        return None
    i = rnd.choice(spots)
    if kind == "drop":
        what = lines[i].strip()
        lines[i] = ""
        return "\n".join(lines), f"line {i + 1} dropped: {what[:60]}", i + 1
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines), f"lines {i + 1} and {i + 2} swapped", i + 1


_ANNOTATION = re.compile(r"pl\.(?:Tensor|Tile)\[\[([0-9, ]+)\], pl\.([A-Z0-9]+)")
_DTYPES = ("FP32", "FP16", "BF16", "INT32", "INT8")


def _type_edit(text: str, rnd: random.Random) -> tuple[str, str, int] | None:
    """``text`` with one annotation's dim or dtype changed (statements' annotations, not a
    signature's: a parameter's type is what the inputs are checked against)."""
    spots = [m for m in _ANNOTATION.finditer(text) if not text[text.rfind("\n", 0, m.start()) + 1 : m.start()].lstrip().startswith("def ")]
    if not spots:
        return None
    m = rnd.choice(spots)
    line = text.count("\n", 0, m.start()) + 1
    if rnd.random() < 0.5:
        dims = [int(d) for d in m.group(1).split(",")]
        i = rnd.randrange(len(dims))
        old = dims[i]
        dims[i] = rnd.choice([old + 1, max(1, old - 1), old * 2, 1])
        new = ", ".join(map(str, dims))
        return text[: m.start(1)] + new + text[m.end(1) :], f"[{m.group(1)}] -> [{new}] on line {line}", line
    dt = rnd.choice([d for d in _DTYPES if d != m.group(2)])
    return text[: m.start(2)] + dt + text[m.end(2) :], f"{m.group(2)} -> {dt} on line {line}", line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default=None)
    ap.add_argument("--edits", default="op,number,name")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--per-dump", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument(
        "--elsewhere", type=int, default=0, metavar="N", help="also list N static findings and run errors per kind not on the edited line"
    )
    args = ap.parse_args()
    import torch

    from pypto_lsp.ir.catalogue import OPS
    from pypto_lsp.validate.engine import compile_text, run_text
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()

    def errors_of(text: str, name: str) -> set[tuple[str, tuple[int, ...]]]:
        """The error findings of ``text`` before a run: (message, the lines it covers and those of
        its related information, which the editor links from it)."""
        out = set()
        for d in compile_text(text, name).diagnostics:
            if d.severity == "error" and d.span:
                spans = [d.span, *(r.span for r in d.related)]
                out.add((d.message, tuple(n for sp in spans for n in range(sp.line, sp.end_line + 1))))
        return out

    folder = Path(args.folder) if args.folder else (COVERAGE if COVERAGE.is_dir() else ROOT / "examples")
    ops = tuple(sorted(OPS))
    found = cases(folder)
    print(f"{folder}: {len(found)} cases; seeds {args.seeds}; {args.per_dump} edits per dump, seed and kind")
    bundles: dict[Path, tuple[dict[str, Any], dict[str, Any]]] = {}
    for case, ins, exp in found:
        tensors = {k: v for k, v in load_bundle(ins).items() if isinstance(v, torch.Tensor)}
        bundles[case] = (tensors, load_bundle(exp))
    print(
        f"{'edit':<7} {'runs':>5} {'static':>6} {'pass':>5} {'fail':>5} {'ours':>5} {'python/torch':>12} {'crash':>5}"
        f" {'static on the line':>18} {'(as before)':>11} {'ours on the line':>16}"
    )
    listed: list[str] = []
    for kind in args.edits.split(","):
        tally: collections.Counter[str] = collections.Counter()
        elsewhere: list[str] = []
        for seed in (int(s) for s in args.seeds.split(",")):
            rnd = random.Random(f"{kind}-{seed}")
            for case, _, _ in found:
                tensors, expected = bundles[case]
                dumps = sorted((case / "passes_dump").glob("*.py"))
                for dump in dumps[:: max(1, len(dumps) // 4)]:
                    text = dump.read_text(encoding="utf-8")
                    for _ in range(args.per_dump):
                        edited = edit(kind, text, rnd, ops)
                        if edited is None:
                            continue
                        new_text, what, line = edited
                        tally["runs"] += 1
                        where = f"{kind}: {case.name}/{dump.name} ({what})"
                        try:
                            r = run_text(
                                new_text, {k: v.clone() for k, v in tensors.items()}, expected, filename=dump.name, timeout=args.timeout
                            )
                        except Exception as exc:
                            tally["crash"] += 1
                            listed.append(f"  crash  {where}: {exc!r}"[:400])
                            continue
                        if r.error is None:
                            tally[r.status] += 1
                        elif r.error.kind.startswith("static"):
                            tally["static"] += 1
                            found_now = errors_of(new_text, dump.name) - errors_of(text, dump.name)
                            lines = {n for _, covered in found_now for n in covered}
                            if not found_now:
                                tally["static as before"] += 1  # the unedited dump has the same findings
                            elif kind == "drop":
                                pass  # (the edited line is empty: what it lost is said where it was read)
                            elif line in lines:
                                tally["static@line"] += 1
                            elif len(elsewhere) < args.elsewhere:
                                elsewhere.append(f"  static elsewhere  {where}: line {r.error.line}: {r.error.message}"[:400])
                        elif any(p in r.error.message for p in PYTHON_WORDS):
                            tally["python"] += 1
                            listed.append(f"  words  {where}: line {r.error.line}: {r.error.message}"[:400])
                        else:
                            tally["ours"] += 1
                            if r.error.line == line:
                                tally["ours@line"] += 1
                            elif kind != "drop" and len(elsewhere) < 2 * args.elsewhere:
                                elsewhere.append(f"  run elsewhere  {where}: line {r.error.line}: {r.error.message}"[:400])
        print(
            f"{kind:<7} {tally['runs']:>5} {tally['static']:>6} {tally['pass']:>5} {tally['fail']:>5} "
            f"{tally['ours']:>5} {tally['python']:>12} {tally['crash']:>5} {'-' if kind == 'drop' else tally['static@line']:>18}"
            f" {tally['static as before']:>11} {'-' if kind == 'drop' else tally['ours@line']:>16}"
        )
        listed += elsewhere
    for entry in listed:
        print(entry)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
