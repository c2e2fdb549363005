"""Every example dump (and three dumps of each ``../shared/fixtures-coverage`` case, when it is
beside the repository), damaged the ways a wrong pass or a bad edit damages it, run by the
engine: whatever the damage, ``run_text`` returns a result, and an error says where it is.

The damage is drawn with a fixed seed (the same runs every time): a line dropped, repeated or
swapped with another; a number changed (0, 1, 7, 64, 1000, 2**31, 10**12); a dtype changed; an op
replaced by another of the catalogue; a keyword given a value of another kind; two names swapped on
a line; the file cut short. A session that ran this on
the shared fixtures found an internal exception of the multi-rank runtime escaping the engine
(a deferred task cancelled before it started), a window buffer of gigabytes allocated rather than
refused, reads above their assignment failing as Python's UnboundLocalError, timeouts that
did not say which loop ran on (``tests/unit/test_ranks.py``, ``test_engine_ir.py``,
``test_parser.py`` pin each), a loop of tasks in program order whose sanitizer grew ~1 GB/s
(``test_sanitizer.py``) and a slice past its source copied out at 2**31 elements
(``test_alloc_budget_runtime.py``).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pypto_lsp.ir.catalogue import OPS as CATALOGUE
from pypto_lsp.validate.engine import run_text
from pypto_lsp.validate.golden import load_bundle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
COVERAGE = ROOT.parent / "shared" / "fixtures-coverage"  # adds cases when beside us
CASES = sorted(p for p in EXAMPLES.iterdir() if (p / "passes_dump").is_dir() and (p / "golden").is_dir())
CASES += sorted(p for p in COVERAGE.iterdir() if (p / "passes_dump").is_dir() and (p / "tensors.pt").is_file()) if COVERAGE.is_dir() else []
PER_DUMP = 12  # damaged copies of each example dump
SAMPLED = 3  # a coverage case's dumps that are damaged (its last, and two drawn), PER_DUMP copies each
# a changed number may ask for gigabytes: refused by the budget (a result like any other) rather
# than made
MAX_ALLOC = 64 << 20
RUN_S = 5  # a run that loops on is stopped after this long: a timeout is a result too
# an op replaced by any op of the catalogue (the whole language: operands it cannot take are
# errors on the line, which name the op)
OPS = tuple(sorted(CATALOGUE))
# a keyword's value replaced by one of another kind (a number, a list, a dtype, an enum member ...)
KEYWORD_VALUES = ("1.0", "7", "-1", "[16, 16]", "pl.FP32", "pl.Mem.Vec", "True", "'x'", "pl.PadValue.zero", "pl.AtomicType.Add")


def damaged(text: str, rnd: random.Random) -> str:
    lines = text.split("\n")
    i = rnd.randrange(len(lines))
    kind = rnd.randrange(9)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[i])
    elif kind == 2:
        j = rnd.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3:
        numbers = list(re.finditer(r"\b\d+\b", text))
        if numbers:
            m = rnd.choice(numbers)
            return text[: m.start()] + str(rnd.choice((0, 1, 7, 64, 1000, 2**31, 10**12))) + text[m.end() :]
    elif kind == 4:
        return re.sub(
            r"pl\.(FP32|BF16|FP16|INT32)\b", lambda _m: "pl." + rnd.choice(("FP32", "BF16", "INT32", "INT8", "BOOL")), text, count=2
        )
    elif kind == 5:
        ops = list(re.finditer(r"\bpl\.(?:tile|tensor|system|array)\.\w+(?=\()|\bpld\.\w+\.\w+(?=\()", text))
        if ops:
            m = rnd.choice(ops)
            op = rnd.choice(OPS)
            return text[: m.start()] + ("" if op.startswith("pld.") else "pl.") + op + text[m.end() :]
    elif kind == 7:
        kws = list(re.finditer(r"\b[a-z_]+=([^,()\[\]]+|\[[^\]]*\])(?=[,)])", text))
        if kws:
            m = rnd.choice(kws)
            return text[: m.start(1)] + rnd.choice(KEYWORD_VALUES) + text[m.end(1) :]
    elif kind == 6:
        names = sorted(set(re.findall(r"\b[a-z_][a-z0-9_]*__\w+\b", lines[i])))
        if len(names) > 1:
            a, b = rnd.sample(names, 2)
            lines[i] = lines[i].replace(a, "\0").replace(b, a).replace("\0", b)
    else:
        return text[: rnd.randrange(len(text))]
    return "\n".join(lines)


def damage_case(case: Path) -> dict[str, list[object]]:
    """Every damaged copy of ``case``'s dumps run in this process: what was wrong with any result."""
    golden = case / "golden" if (case / "golden").is_dir() else case
    inputs = {
        k: v for k, v in load_bundle(golden / ("inputs.pt" if golden != case else "tensors.pt")).items() if isinstance(v, torch.Tensor)
    }
    expected = load_bundle(golden / "expected.pt")
    rnd = random.Random(f"mutated-runs:{case.name}")
    out: dict[str, list[object]] = {"unplaced": [], "statuses": []}
    dumps = sorted((case / "passes_dump").glob("*.py"))
    if golden == case:  # a coverage case: fifty dumps of one program, a few of them
        dumps = [dumps[-1], *rnd.sample(dumps[:-1], min(SAMPLED - 1, len(dumps) - 1))]
    for dump in dumps:
        original = dump.read_text(encoding="utf-8")
        for n in range(PER_DUMP):
            text = damaged(original, rnd)
            # nothing may escape: a wrong program is a result, never an exception of ours
            r = run_text(text, {k: v.clone() for k, v in inputs.items()}, expected, filename=dump.name, timeout=RUN_S, max_alloc=MAX_ALLOC)
            if r.status not in ("pass", "fail", "error", "ran"):
                out["statuses"].append((dump.name, n, r.status))
            if r.status == "error":
                assert r.error is not None and r.error.message
                if r.error.line is None and r.error.kind not in ("golden", "static:no-entry", "static:no-functions", "static:parse"):
                    out["unplaced"].append((dump.name, n, r.error.kind, r.error.message[:120]))
    return out


@pytest.fixture(scope="module")
def found() -> dict[str, dict[str, list[object]]]:
    """Every case damaged and run in one process of its own: a damaged run may still make big
    tensors under the budget, and the later tests' children would inherit this process's peak RSS."""
    p = subprocess.run([sys.executable, __file__, *map(str, CASES)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_damaged_dumps_get_a_result_and_errors_a_line(case: Path, found: dict[str, dict[str, list[object]]]) -> None:
    assert found[case.name] == {"unplaced": [], "statuses": []}, found[case.name]


if __name__ == "__main__":
    print(json.dumps({Path(a).name: damage_case(Path(a)) for a in sys.argv[1:]}))
