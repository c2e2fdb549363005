/** The extension manifest and the layering rule, checked against the server contract. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';

// compiled to out/test/unit/: the package root is three levels up
const root = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

describe('package.json', () => {
    test('user commands in the "PyPTO LSP" category', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        for (const id of [
            'validateThisPass',
            'validateAllPasses',
            'firstDivergentPass',
            'compareWithPrevious',
            'showGeneratedCode',
            'showConfig',
            'restartServer',
            'configureGolden',
        ]) {
            assert.ok(ids.includes(`pypto-lsp.cmd.${id}`), id);
        }
        for (const c of pkg.contributes.commands) {
            assert.equal(c.category, 'PyPTO LSP', c.command);
        }
    });
    test('the client-side commands of the server\'s lenses are contributed but not in the palette', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        const hidden = pkg.contributes.menus.commandPalette
            .filter((m: { when?: string }) => m.when === 'false')
            .map((m: { command: string }) => m.command);
        for (const id of ['pypto-lsp.compareWithPrevious', 'pypto-lsp.configureGolden', 'pypto-lsp.revealLine', 'pypto-lsp.debugPass']) {
            assert.ok(ids.includes(id), id);
            assert.ok(hidden.includes(id), id);
        }
    });
    test('server-side command ids are not contributed (vscode-languageclient registers them)', () => {
        const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
        for (const id of ['pypto-lsp.validateFile', 'pypto-lsp.validateFolder', 'pypto-lsp.firstDivergentPass']) {
            assert.ok(!ids.includes(id), id);
        }
    });
    test('settings and their defaults', () => {
        const p = pkg.contributes.configuration.properties;
        assert.equal(p['pypto-lsp.runOn'].default, 'onSave');
        assert.deepEqual(p['pypto-lsp.runOn'].enum, ['onSave', 'onType', 'manual']);
        assert.equal(p['pypto-lsp.rtol'].default, 0.05);
        assert.equal(p['pypto-lsp.atol'].default, 0.05);
        assert.equal(p['pypto-lsp.timeoutSeconds'].default, 30);
        assert.deepEqual(p['pypto-lsp.trace.server'].enum, ['off', 'messages', 'verbose']);
        for (const k of ['interpreter', 'golden.inputs', 'golden.expected']) {
            assert.ok(p[`pypto-lsp.${k}`], k);
        }
    });
    test('activation, trust, engine', () => {
        assert.deepEqual(pkg.activationEvents, ['workspaceContains:**/passes_dump*/*.py', 'onLanguage:python']);
        assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
        assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes('pypto-lsp.interpreter'));
        assert.equal(pkg.engines.vscode, '^1.100.0');
        assert.match(pkg.dependencies['vscode-languageclient'], /^\^?9\./);
        assert.equal(pkg.main, './dist/extension.js');
    });
    test('the passes view is in the explorer', () => {
        assert.equal(pkg.contributes.views.explorer[0].id, 'pypto-lsp.passes');
        assert.equal(pkg.contributes.views.explorer[0].name, 'PyPTO Passes');
    });
});

describe('layering', () => {
    test('src/core never imports vscode (so it is testable here)', () => {
        const dir = path.join(root, 'src', 'core');
        for (const f of fs.readdirSync(dir)) {
            const text = fs.readFileSync(path.join(dir, f), 'utf8');
            assert.ok(!/from ['"]vscode['"]|require\(['"]vscode['"]\)/.test(text), f);
        }
    });
});
