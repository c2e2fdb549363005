import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FileResult } from '../../src/core/protocol';
import { parentUri, ResultStore } from '../../src/core/results';

const D = 'file:///w/passes_dump';

function r(name: string, status: FileResult['status'], first_divergent: string | null = null): FileResult {
    return { uri: `${D}/${name}`, file: name, status, tensors: {}, seconds: 0.1, error: null, cached: false, first_divergent };
}

describe('ResultStore', () => {
    test('keeps the last result per uri and notifies', () => {
        const s = new ResultStore();
        const seen: string[][] = [];
        const sub = s.onDidChange((u) => seen.push([...u]));
        s.update(r('00.py', 'pending'));
        s.update(r('00.py', 'pass'));
        assert.equal(s.get(`${D}/00.py`)?.status, 'pass');
        assert.deepEqual(seen, [[`${D}/00.py`], [`${D}/00.py`]]);
        sub.dispose();
        s.update(r('01.py', 'fail'));
        assert.equal(seen.length, 2);
    });
    test('first divergent: from file results, from a folder run (which can say none), cleared', () => {
        const s = new ResultStore();
        assert.equal(s.firstDivergent(D), undefined);
        s.update(r('35.py', 'fail', `${D}/35.py`));
        assert.equal(s.firstDivergent(D), `${D}/35.py`);
        s.updateFolder(D, { files: [r('00.py', 'pass'), r('01.py', 'pass')], first_divergent: null });
        assert.equal(s.firstDivergent(D), null);
        assert.equal(s.get(`${D}/01.py`)?.status, 'pass');
        s.clear();
        assert.equal(s.get(`${D}/01.py`), undefined);
        assert.equal(s.firstDivergent(D), undefined);
    });
    test('a fixed first divergent pass is forgotten, an unrelated pass leaves it', () => {
        const s = new ResultStore();
        s.update(r('35.py', 'fail', `${D}/35.py`));
        s.update(r('36.py', 'pass'));
        assert.equal(s.firstDivergent(D), `${D}/35.py`);
        s.update(r('35.py', 'fail'));
        assert.equal(s.firstDivergent(D), `${D}/35.py`);
        s.update(r('35.py', 'pass'));
        assert.equal(s.firstDivergent(D), undefined);
    });
    test('parentUri', () => {
        assert.equal(parentUri(`${D}/00.py`), D);
    });
});
