import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { basenameOfUri, parseDivergentLocation, parseFileResult, parseFolderResult } from '../../src/core/protocol';

describe('parseFileResult', () => {
    test('a full result passes through', () => {
        const raw = {
            uri: 'file:///w/passes_dump/35_after_X.py',
            file: '35_after_X.py',
            status: 'fail',
            tensors: { out: { max_abs_diff: 0.24, max_rel_diff: 1.1, pass: false } },
            seconds: 0.3,
            error: { kind: 'mismatch', message: 'm', line: 40, column: 8 },
            cached: true,
            first_divergent: 'file:///w/passes_dump/35_after_X.py',
        };
        assert.deepEqual(parseFileResult(raw), raw);
    });
    test('missing fields get safe defaults', () => {
        const r = parseFileResult({ uri: 'file:///w/passes_dump/01_after_Y.py' });
        assert.deepEqual(r, {
            uri: 'file:///w/passes_dump/01_after_Y.py',
            file: '01_after_Y.py',
            status: 'error',
            tensors: {},
            seconds: NaN,
            error: null,
            cached: false,
            first_divergent: null,
        });
    });
    test('unknown statuses become error; bad tensors are dropped', () => {
        const r = parseFileResult({ uri: 'file:///a.py', status: 'weird', tensors: { a: 3, b: { max_abs_diff: 1, pass: true } } });
        assert.equal(r?.status, 'error');
        assert.deepEqual(Object.keys(r!.tensors), ['b']);
        assert.ok(Number.isNaN(r!.tensors.b.max_rel_diff));
    });
    test('not a result', () => {
        assert.equal(parseFileResult(null), undefined);
        assert.equal(parseFileResult({}), undefined);
        assert.equal(parseFileResult({ uri: '' }), undefined);
        assert.equal(parseFileResult([1]), undefined);
    });
});

describe('parseFolderResult / parseDivergentLocation', () => {
    test('folder results keep valid files only', () => {
        const r = parseFolderResult({ files: [{ uri: 'file:///a.py', status: 'pass' }, { nope: 1 }], first_divergent: '' });
        assert.equal(r.files.length, 1);
        assert.equal(r.first_divergent, null);
        assert.deepEqual(parseFolderResult(undefined), { files: [], first_divergent: null });
    });
    test('divergent location', () => {
        const loc = parseDivergentLocation({
            uri: 'file:///a.py',
            range: { start: { line: 3, character: 1 }, end: { line: 3, character: 9 } },
        });
        assert.deepEqual(loc, { uri: 'file:///a.py', range: { start: { line: 3, character: 1 }, end: { line: 3, character: 9 } } });
        assert.deepEqual(parseDivergentLocation({ uri: 'file:///a.py' })?.range.start, { line: 0, character: 0 });
        assert.equal(parseDivergentLocation(null), null);
    });
    test('basenameOfUri decodes', () => {
        assert.equal(basenameOfUri('file:///w/passes%20dump/00_frontend.py'), '00_frontend.py');
        assert.equal(basenameOfUri('file:///w/my%20file.py?x#y'), 'my file.py');
    });
});
