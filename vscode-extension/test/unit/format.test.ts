import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
    describeResult,
    folderMessage,
    formatDiff,
    formatSeconds,
    formatTensors,
    maxAbsDiff,
    resultTooltip,
    statusBarText,
    summariseFolder,
} from '../../src/core/format';
import { FileResult } from '../../src/core/protocol';

function result(over: Partial<FileResult> = {}): FileResult {
    return {
        uri: 'file:///w/passes_dump/35_after_AllocateMemoryAddr.py',
        file: '35_after_AllocateMemoryAddr.py',
        status: 'fail',
        tensors: { out: { max_abs_diff: 0.2393, max_rel_diff: 1.5, pass: false } },
        seconds: 0.2987,
        error: null,
        cached: false,
        first_divergent: null,
        ...over,
    };
}

describe('formatDiff', () => {
    test('three significant digits in exponent form', () => {
        assert.equal(formatDiff(9.766e-4), '9.77e-4');
        assert.equal(formatDiff(0.2393), '2.39e-1');
        assert.equal(formatDiff(150), '1.50e+2');
    });
    test('zero, non-finite and missing values', () => {
        assert.equal(formatDiff(0), '0');
        assert.equal(formatDiff(Infinity), 'inf');
        assert.equal(formatDiff(-Infinity), '-inf');
        assert.equal(formatDiff(NaN), 'n/a');
        assert.equal(formatDiff(undefined), 'n/a');
        assert.equal(formatDiff(null), 'n/a');
    });
});

describe('formatSeconds', () => {
    test('picks a unit by magnitude', () => {
        assert.equal(formatSeconds(0.004), '4 ms');
        assert.equal(formatSeconds(0.2987), '0.30 s');
        assert.equal(formatSeconds(12.34), '12.3 s');
        assert.equal(formatSeconds(125), '2 min 5 s');
    });
    test('empty for unknown times', () => {
        assert.equal(formatSeconds(NaN), '');
        assert.equal(formatSeconds(-1), '');
        assert.equal(formatSeconds(undefined), '');
    });
});

describe('result summaries', () => {
    test('maxAbsDiff takes the largest tensor diff and ignores NaN', () => {
        const r = result({
            tensors: {
                a: { max_abs_diff: 0.1, max_rel_diff: 0, pass: true },
                b: { max_abs_diff: NaN, max_rel_diff: NaN, pass: false },
                c: { max_abs_diff: 0.3, max_rel_diff: 0, pass: false },
            },
        });
        assert.equal(maxAbsDiff(r), 0.3);
        assert.ok(Number.isNaN(maxAbsDiff(result({ tensors: {} }))));
    });
    test('describeResult: verdict, max diff, time', () => {
        assert.equal(describeResult(result()), 'FAIL 2.39e-1 · 0.30 s');
        assert.equal(describeResult(result({ cached: true, status: 'pass' })), 'PASS 2.39e-1 · 0.30 s (cached)');
        assert.equal(describeResult(result({ seconds: NaN })), 'FAIL 2.39e-1');
        assert.equal(describeResult(undefined), '');
    });
    test('describeResult shows the error kind when there are no tensors', () => {
        const r = result({ status: 'error', tensors: {}, error: { kind: 'timeout', message: 'tpop blocked', line: 12, column: 4 } });
        assert.equal(describeResult(r), 'ERROR (timeout) · 0.30 s');
    });
    test('status bar text carries a codicon, the verdict and the diff', () => {
        assert.equal(statusBarText(result()), '$(error) PyPTO FAIL 2.39e-1');
        assert.equal(statusBarText(result({ status: 'pass', tensors: { out: { max_abs_diff: 9.766e-4, max_rel_diff: 0, pass: true } } })), '$(pass) PyPTO PASS 9.77e-4');
        assert.equal(statusBarText(result({ status: 'pending', tensors: {} })), '$(sync~spin) PyPTO PENDING');
        assert.equal(statusBarText(undefined), '$(circle-outline) PyPTO');
    });
    test('formatTensors and the tooltip list every tensor', () => {
        const r = result({
            tensors: { out: { max_abs_diff: 0.2393, max_rel_diff: 1.5, pass: false }, res: { max_abs_diff: 0, max_rel_diff: 0, pass: true } },
            error: { kind: 'mismatch', message: "tensor 'out' differs", line: 40, column: 8 },
        });
        assert.equal(formatTensors(r), 'out 2.39e-1 ✗, res 0 ✓');
        const tip = resultTooltip(r, '35.py');
        assert.match(tip, /^35\.py: FAIL/);
        assert.match(tip, /out: max \|Δ\| 2\.39e-1, max rel 1\.50e\+0 ✗/);
        assert.match(tip, /mismatch at line 40: tensor 'out' differs/);
        assert.equal(resultTooltip(undefined, 'x.py'), 'x.py: not validated yet');
    });
});

describe('folder summaries', () => {
    test('counts and the message', () => {
        const files = [result({ status: 'pass' }), result({ status: 'pass' }), result({ status: 'fail' }), result({ status: 'error' })];
        const s = summariseFolder({ files, first_divergent: null });
        assert.equal(s.total, 4);
        assert.deepEqual(s.counts, { pass: 2, fail: 1, error: 1, ran: 0, pending: 0, skipped: 0 });
        assert.equal(
            folderMessage({ files, first_divergent: 'u' }, '35_after_AllocateMemoryAddr.py'),
            '4 passes: 2 pass, 1 fail, 1 error. First divergent: 35_after_AllocateMemoryAddr.py',
        );
    });
    test('all passing says so', () => {
        assert.equal(folderMessage({ files: [result({ status: 'pass' })], first_divergent: null }, null), '1 pass: 1 pass. No divergent pass.');
        assert.equal(folderMessage({ files: [], first_divergent: null }, null), '0 passes: nothing validated. No divergent pass.');
    });
});
