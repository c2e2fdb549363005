/** The `pypto` debugger's pure parts: launch configurations and the inline-value names. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { ADAPTER_ARGS, completeLaunch, DEBUG_TYPE, inlineTargets, launchFor, SHOW_TILE_ERROR_MAP, tileMapNote } from '../../src/core/debug';

const root = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

const DUMP = [
    '# pypto.program: ExpAddMul',
    'import pypto.language as pl',
    '@pl.program',
    'class ExpAddMul:',
    '    @pl.function(type=pl.FunctionType.InCore)',
    '    def k(x: pl.Tensor[[64, 128], pl.FP32]) -> pl.Tensor[[64, 128], pl.FP32]:',
    '        for r__idx_v0, (out__iter_v1,) in pl.range(0, 64, 32, init_values=(out,)):',
    '            x_chunk__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [r__idx_v0, 0], [32, 128], [32, 128])',
    '            pl.tile.tpush_to_aiv(x_chunk__tile, split=0)',
    '            t__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.adds(x_chunk__tile, 1.0)',
    '            u__tile: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t__tile)',
    '        return out',
    '    def main(self, x: pl.Tensor[[64, 128], pl.FP32]) -> pl.Tensor[[64, 128], pl.FP32]:',
    '        out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = self.k(x)',
];

describe('debugger', () => {
    test('the lens launches the dump with the exception stops on', () => {
        const l = launchFor('/w/passes_dump/11_x.py', '11_x.py');
        assert.equal(l.type, DEBUG_TYPE);
        assert.equal(l.request, 'launch');
        assert.equal(l.program, '/w/passes_dump/11_x.py');
        assert.ok(l.stopOnFirstDifference && l.stopOnNaN && l.stopOnFinding);
        assert.deepEqual([...ADAPTER_ARGS], ['-m', 'pypto_lsp', 'debug']);
    });
    test('F5 without launch.json debugs the active dump; a config without program takes it too', () => {
        assert.equal(completeLaunch({}, '/w/a.py', 'a.py')?.program, '/w/a.py');
        assert.equal(completeLaunch({}, undefined, undefined), undefined);
        const c = completeLaunch({ type: 'pypto', request: 'launch', name: 'n', stopOnNaN: true }, '/w/b.py', 'b.py');
        assert.equal(c?.program, '/w/b.py');
        assert.equal(c?.stopOnNaN, true);
        assert.equal(completeLaunch({ type: 'pypto', request: 'launch', name: 'n', program: '/w/c.py' }, '/w/b.py', 'b.py')?.program, '/w/c.py');
        assert.equal(completeLaunch({ type: 'pypto', request: 'launch', name: 'n' }, undefined, undefined), undefined);
    });
    test('inline values: the names assigned from the function start to the stopped line', () => {
        const t = inlineTargets(DUMP, 9);
        assert.deepEqual(
            t.map((x) => [x.line, x.name]),
            [
                [6, 'r__idx_v0'],
                [7, 'x_chunk__tile'],
                [9, 't__tile'],
            ],
        );
        assert.equal(t[1].column, 12);
        // in the orchestration: only its own names
        assert.deepEqual(
            inlineTargets(DUMP, 13).map((x) => x.name),
            ['out__rv_v2'],
        );
    });
    test('package.json contributes the debugger, its snippets and the commands', () => {
        const d = pkg.contributes.debuggers.find((x: { type: string }) => x.type === DEBUG_TYPE);
        assert.ok(d);
        const props = d.configurationAttributes.launch.properties;
        for (const k of ['program', 'config', 'inputs', 'expected', 'entry', 'stopOnEntry', 'stopOnNaN', 'stopOnFirstDifference', 'stopOnFinding']) {
            assert.ok(props[k], k);
        }
        assert.ok(d.configurationSnippets.length >= 2);
        assert.ok(d.configurationSnippets.every((s: { body: { type: string } }) => s.body.type === DEBUG_TYPE));
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        assert.ok(ids.includes('pypto-lsp.debugPass') && ids.includes('pypto-lsp.cmd.debugThisPass'));
        assert.ok(pkg.contributes.breakpoints.some((b: { language: string }) => b.language === 'python'));
        const ctx = pkg.contributes.menus['debug/variables/context'];
        assert.ok(ctx.some((m: { command: string; when: string }) => m.command === SHOW_TILE_ERROR_MAP && /debugType == 'pypto'/.test(m.when)));
    });
    test('a tile picture says what it is compared with', () => {
        assert.equal(tileMapNote('t__tile', { against: 'the previous pass', line: 24 }), "'t__tile' at line 24 against the previous pass");
    });
});
