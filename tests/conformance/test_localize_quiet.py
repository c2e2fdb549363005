"""Localisation stays silent where nothing is wrong: every pair of consecutive passing passes of
the real dumps (the previous one as reference, the next one traced against it) yields no
"first differing value". Pairs whose texts are equal once comments and addresses are
normalised away run identically and are skipped. Skipped when ../shared/fixtures is absent."""

from __future__ import annotations

import json

import pytest

from pypto_lsp.validate.folders import normalise
from pypto_lsp.validate.golden import load_bundle
from pypto_lsp.validate.localize import first_differing_value
from pypto_lsp.validate.process_setup import configure_process

from .conformance import FIXTURES, KNOWN_DISAGREEMENTS

pytestmark = pytest.mark.conformance


def test_no_first_differing_value_between_passing_passes() -> None:
    verdicts_path = FIXTURES / "verdicts.json"
    if not verdicts_path.is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}: conformance suite skipped")
    configure_process()
    verdicts = json.loads(verdicts_path.read_text())
    ok = ("pass", "ran")
    pairs = reports = 0
    unexpected = []
    for case, spec in verdicts.items():
        names = sorted(spec["files"])
        dumps = FIXTURES / spec["dir"] / "passes_dump"
        inputs = None
        for a, b in zip(names, names[1:], strict=False):
            if spec["files"][a]["status"] not in ok or spec["files"][b]["status"] not in ok:
                continue
            if (case, a) in KNOWN_DISAGREEMENTS or (case, b) in KNOWN_DISAGREEMENTS:
                continue  # we do not reach that file's verdict: it is no passing reference here
            prev, cur = (dumps / a).read_text(), (dumps / b).read_text()
            if normalise(prev) == normalise(cur):
                continue
            if inputs is None:
                inputs = load_bundle(FIXTURES / spec["inputs"])
            pairs += 1
            found = first_differing_value(prev, cur, inputs, rtol=spec["rtol"], atol=spec["atol"], entry=spec.get("entry"))
            if found is not None:
                reports += 1
                unexpected.append(f"{case}: {b}:{found.line}: {found.describe(a)}")
    print(f"localisation over {pairs} changed pairs of passing passes: {reports} reports")
    assert pairs > 500
    assert not unexpected, "\n".join(unexpected)
