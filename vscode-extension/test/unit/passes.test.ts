import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
    comparePassNames,
    filterPasses,
    hasProgramHeader,
    inferFirstDivergent,
    isDumpDocument,
    isDumpPath,
    parsePassName,
    PassEntry,
    previousPass,
    sortPassFiles,
    unchangedFromChart,
} from '../../src/core/passes';
import { FileResult, Verdict } from '../../src/core/protocol';

describe('which files are dumps', () => {
    test('python files under a passes_dump* folder', () => {
        assert.ok(isDumpPath('/w/build/passes_dump/35_after_AllocateMemoryAddr.py'));
        assert.ok(isDumpPath('/w/passes_dump_910b/00_frontend.py'));
        assert.ok(isDumpPath('/w/passes_dump/sub/x.py'));
        assert.ok(isDumpPath('C:\\w\\passes_dump\\01_after_X.py'));
        assert.ok(!isDumpPath('/w/passes_dump/notes.md'));
        assert.ok(!isDumpPath('/w/src/passes_dump.py'));
        assert.ok(!isDumpPath('/w/src/model.py'));
    });
    test('or a python file whose first line is the program header', () => {
        assert.ok(hasProgramHeader('# pypto.program: _jit_tile_softmax'));
        assert.ok(hasProgramHeader('\uFEFF# pypto.program: x'));
        assert.ok(!hasProgramHeader('import pypto.language as pl'));
        assert.ok(isDumpDocument('/tmp/copy.py', '# pypto.program: qwen3'));
        assert.ok(!isDumpDocument('/tmp/copy.txt', '# pypto.program: qwen3'));
        assert.ok(!isDumpDocument('/tmp/copy.py', 'import os'));
    });
});

describe('pipeline order', () => {
    test('file-name order, numerically aware', () => {
        const names = ['10_after_B.py', '02_after_A.py', '100_after_Z.py', '00_frontend.py', '99_after_Y.py', 'README.md', '.hidden.py'];
        assert.deepEqual(sortPassFiles(names), ['00_frontend.py', '02_after_A.py', '10_after_B.py', '99_after_Y.py', '100_after_Z.py']);
        assert.ok(comparePassNames('9_x.py', '10_x.py') < 0);
        // 100+ passes: as text, 1001_after_X would come first (issue 12)
        assert.deepEqual(sortPassFiles(['1001_after_X.py', '89_after_Y.py', '100_after_B.py']), ['89_after_Y.py', '100_after_B.py', '1001_after_X.py']);
        assert.equal(comparePassNames('a.py', 'a.py'), 0);
    });
    test('previous pass', () => {
        const names = ['01_after_InlineFunctions.py', '00_frontend.py', '02_after_UnrollLoops.py'];
        assert.equal(previousPass(names, '02_after_UnrollLoops.py'), '01_after_InlineFunctions.py');
        assert.equal(previousPass(names, '01_after_InlineFunctions.py'), '00_frontend.py');
        assert.equal(previousPass(names, '00_frontend.py'), undefined);
        assert.equal(previousPass(names, 'missing.py'), undefined);
    });
    test('pass names', () => {
        assert.deepEqual(parsePassName('35_after_AllocateMemoryAddr.py'), { index: 35, pass: 'AllocateMemoryAddr' });
        assert.deepEqual(parsePassName('00_frontend.py'), { index: 0, pass: 'frontend' });
        assert.deepEqual(parsePassName('scratch.py'), { index: undefined, pass: 'scratch' });
    });
});

describe('IR change flags come from the server', () => {
    // the shape of a pypto-lsp/passChart answer (pypto_lsp/validate/passchart.py), trimmed
    const chart = {
        passes: [
            { index: 0, file: '/w/passes_dump/00_frontend.py', unchanged: false, status: 'unknown' },
            { index: 1, file: '/w/passes_dump/22_after_ExpandMixedKernel.py', unchanged: false, status: 'pass' },
            // address-only: pypto_lsp/ir/passdiff.py ignores pl.MemRef items and tile.alloc lines
            { index: 2, file: '/w/passes_dump/32_after_InitMemRef.py', unchanged: true, status: 'unknown' },
            { index: 3, file: 'C:\\w\\passes_dump\\46_after_X.py', unchanged: true, status: 'unknown' },
        ],
    };
    test('each pass by file name, with the flag the pass chart draws', () => {
        const flags = unchangedFromChart(chart);
        assert.deepEqual([...flags.entries()], [
            ['00_frontend.py', false],
            ['22_after_ExpandMixedKernel.py', false],
            ['32_after_InitMemRef.py', true],
            ['46_after_X.py', true],
        ]);
    });
    test('an answer without passes, or passes without a boolean flag, says nothing', () => {
        assert.equal(unchangedFromChart(undefined).size, 0);
        assert.equal(unchangedFromChart({ error: 'x' }).size, 0);
        assert.equal(unchangedFromChart({ passes: [{ file: '/w/a.py' }, null, { file: 3, unchanged: true }] }).size, 0);
    });
    test('unknown flags leave the entry unknown, which the filter keeps', () => {
        const names = (xs: PassEntry[]) => xs.map((e) => e.name);
        const flags = unchangedFromChart(chart);
        const es = ['00_frontend.py', '32_after_InitMemRef.py', '99_new.py'].map((n) => {
            const u = flags.get(n);
            return entry(n, undefined, u === undefined ? undefined : !u);
        });
        assert.deepEqual(names(filterPasses(es, { failingOnly: false, hideUnchanged: true })), ['00_frontend.py', '99_new.py']);
    });
});

function entry(name: string, status?: Verdict, changed?: boolean, firstDivergent = false): PassEntry {
    const uri = `file:///w/passes_dump/${name}`;
    const result: FileResult | undefined = status
        ? { uri, file: name, status, tensors: {}, seconds: 0, error: null, cached: false, first_divergent: null }
        : undefined;
    return { name, uri, result, changed, firstDivergent };
}

describe('tree filters', () => {
    const entries = [
        entry('00.py', 'pass', true),
        entry('01.py', 'pass', false),
        entry('02.py', undefined, undefined),
        entry('03.py', 'fail', true, true),
        entry('04.py', 'fail', false),
        entry('05.py', 'error', true),
        entry('06.py', 'pending', true),
    ];
    const names = (xs: PassEntry[]) => xs.map((e) => e.name);
    test('no filter keeps everything', () => {
        assert.deepEqual(names(filterPasses(entries, { failingOnly: false, hideUnchanged: false })), names(entries));
    });
    test('failing only keeps fail/error (and the first divergent pass)', () => {
        assert.deepEqual(names(filterPasses(entries, { failingOnly: true, hideUnchanged: false })), ['03.py', '04.py', '05.py']);
    });
    test('hide unchanged drops files whose IR equals the previous one (unknown is kept)', () => {
        assert.deepEqual(names(filterPasses(entries, { failingOnly: false, hideUnchanged: true })), ['00.py', '02.py', '03.py', '05.py', '06.py']);
    });
    test('both filters combine; the first divergent pass always stays', () => {
        const withUnchangedDivergent = entries.map((e) => (e.name === '03.py' ? { ...e, changed: false } : e));
        assert.deepEqual(names(filterPasses(withUnchangedDivergent, { failingOnly: true, hideUnchanged: true })), ['03.py', '05.py']);
    });
    test('first divergent inferred from results: first failing file in order', () => {
        assert.equal(inferFirstDivergent(entries), 'file:///w/passes_dump/03.py');
        assert.equal(inferFirstDivergent([entry('00.py', 'pass'), entry('01.py', 'error')]), 'file:///w/passes_dump/01.py');
        assert.equal(inferFirstDivergent([entry('00.py', 'pass'), entry('01.py')]), undefined);
    });
});
