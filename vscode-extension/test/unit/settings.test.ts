import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
    chooseInterpreter,
    DEFAULTS,
    expandVariables,
    importErrorMessage,
    installCommand,
    IMPORT_CHECK_CODE,
    needsRestart,
    normaliseSettings,
    resolveFileSetting,
    resolveInterpreterSetting,
    RUN_SETTINGS,
    runSettingValue,
    sameServerOptions,
    declaredRunSettings,
} from '../../src/core/settings';

const ctx = { workspaceFolder: '/ws', home: '/home/u', env: { VENV: '/opt/venv' } };

describe('expandVariables', () => {
    test('workspaceFolder, userHome, env and ~', () => {
        assert.equal(expandVariables('${workspaceFolder}/.venv/bin/python', ctx), '/ws/.venv/bin/python');
        assert.equal(expandVariables('${userHome}/x', ctx), '/home/u/x');
        assert.equal(expandVariables('${env:VENV}/bin/python', ctx), '/opt/venv/bin/python');
        assert.equal(expandVariables('${env:NOPE}x', ctx), 'x');
        assert.equal(expandVariables('~/py', ctx), '/home/u/py');
        assert.equal(expandVariables('~', ctx), '/home/u');
        assert.equal(expandVariables('a~b', ctx), 'a~b');
    });
    test('no workspace folder leaves the variable as written', () => {
        assert.equal(expandVariables('${workspaceFolder}/p', { home: '/h', env: {} }), '${workspaceFolder}/p');
        assert.equal(expandVariables('${unknown}', ctx), '${unknown}');
    });
});

describe('path settings', () => {
    test('interpreter: absolute, relative to the folder, or a bare command', () => {
        assert.equal(resolveInterpreterSetting('/usr/bin/python3.11', ctx), '/usr/bin/python3.11');
        assert.equal(resolveInterpreterSetting('.venv/bin/python', ctx), '/ws/.venv/bin/python');
        assert.equal(resolveInterpreterSetting('python3.11', ctx), 'python3.11');
        assert.equal(resolveInterpreterSetting('  ', ctx), undefined);
        assert.equal(resolveInterpreterSetting(42, ctx), undefined);
    });
    test('golden files: relative to the folder, empty is null', () => {
        assert.equal(resolveFileSetting('golden/in.pt', ctx), '/ws/golden/in.pt');
        assert.equal(resolveFileSetting('/abs/in.pt', ctx), '/abs/in.pt');
        assert.equal(resolveFileSetting('', ctx), null);
        assert.equal(resolveFileSetting(undefined, ctx), null);
        assert.equal(resolveFileSetting('in.pt', { home: '/h', env: {} }), 'in.pt');
    });
});

/** The defaults of run settings declared after these tests were written (a new one needs no edit here). */
function otherRunSettings(): Record<string, unknown> {
    const named = ['rtol', 'atol', 'timeoutSeconds', 'memory', 'maxAlloc', 'exact', 'sanitize'];
    return Object.fromEntries(RUN_SETTINGS.filter((r) => !named.includes(r.key)).map((r) => [r.key, runSettingValue(r, undefined)]));
}

describe('normaliseSettings', () => {
    test('defaults for an empty configuration', () => {
        const s = normaliseSettings({}, ctx, true);
        assert.equal(s.interpreter, undefined);
        assert.deepEqual(s.server, {
            ...otherRunSettings(),
            runOn: 'onSave',
            rtol: DEFAULTS.rtol,
            atol: DEFAULTS.atol,
            timeoutSeconds: 30,
            golden: { inputs: null, expected: null },
            validation: true,
            memory: true,
            maxAlloc: null,
            exact: false,
            sanitize: true,
        });
    });
    test('valid values are kept and resolved', () => {
        const s = normaliseSettings(
            {
                interpreter: '${workspaceFolder}/.venv/bin/python',
                runOn: 'manual',
                rtol: 0.001,
                atol: 0,
                timeoutSeconds: 5,
                golden: { inputs: 'g/in.pt', expected: '/abs/exp.safetensors' },
            },
            ctx,
            true,
        );
        assert.equal(s.interpreter, '/ws/.venv/bin/python');
        assert.deepEqual(s.server, {
            ...otherRunSettings(),
            runOn: 'manual',
            rtol: 0.001,
            atol: 0,
            timeoutSeconds: 5,
            golden: { inputs: '/ws/g/in.pt', expected: '/abs/exp.safetensors' },
            validation: true,
            memory: true,
            maxAlloc: null,
            exact: false,
            sanitize: true,
        });
    });
    test('invalid values fall back to the defaults', () => {
        const s = normaliseSettings({ runOn: 'always', rtol: -1, atol: 'x', timeoutSeconds: 0, golden: 'nope' }, ctx, true);
        assert.equal(s.server.runOn, 'onSave');
        assert.equal(s.server.rtol, 0.05);
        assert.equal(s.server.atol, 0.05);
        assert.equal(s.server.timeoutSeconds, 30);
        assert.deepEqual(s.server.golden, { inputs: null, expected: null });
        assert.equal(normaliseSettings({ rtol: NaN, timeoutSeconds: Infinity }, ctx, true).server.rtol, 0.05);
    });
    test('maxAlloc: a size string or a positive number of bytes, else the default (null)', () => {
        assert.equal(normaliseSettings({ maxAlloc: ' 512M ' }, ctx, true).server.maxAlloc, '512M');
        assert.equal(normaliseSettings({ maxAlloc: 4096 }, ctx, true).server.maxAlloc, 4096);
        assert.equal(normaliseSettings({ maxAlloc: 'lots' }, ctx, true).server.maxAlloc, null);
        assert.equal(normaliseSettings({ maxAlloc: -1 }, ctx, true).server.maxAlloc, null);
        assert.equal(normaliseSettings({ maxAlloc: '' }, ctx, true).server.maxAlloc, null);
    });
    test('memory: on unless set to false', () => {
        assert.equal(normaliseSettings({ memory: false }, ctx, true).server.memory, false);
        assert.equal(normaliseSettings({ memory: 'no' }, ctx, true).server.memory, true);
    });
    test('sanitize: on unless set to false', () => {
        assert.equal(normaliseSettings({}, ctx, true).server.sanitize, true);
        assert.equal(normaliseSettings({ sanitize: false }, ctx, true).server.sanitize, false);
        assert.equal(normaliseSettings({ sanitize: 'no' }, ctx, true).server.sanitize, true);
        // "strict": on, and reads of undefined values that reach nothing listed as information
        assert.equal(normaliseSettings({ sanitize: 'strict' }, ctx, true).server.sanitize, 'strict');
    });

    test('exact: off unless set to true', () => {
        assert.equal(normaliseSettings({ exact: true }, ctx, true).server.exact, true);
        assert.equal(normaliseSettings({ exact: 'yes' }, ctx, true).server.exact, false);
    });
    test('an untrusted workspace turns validation off', () => {
        assert.equal(normaliseSettings({}, ctx, false).server.validation, false);
    });
    test('restart vs push', () => {
        const a = normaliseSettings({ interpreter: '/a/python' }, ctx, true);
        const b = normaliseSettings({ interpreter: '/b/python' }, ctx, true);
        const a2 = normaliseSettings({ interpreter: '/a/python', rtol: 0.1 }, ctx, true);
        assert.ok(needsRestart(undefined, a));
        assert.ok(needsRestart(a, b));
        assert.ok(!needsRestart(a, a2));
        assert.ok(!sameServerOptions(a.server, a2.server));
        assert.ok(sameServerOptions(a.server, b.server));
    });
});

describe('run settings (declared in package.json, from the server\'s RunSettings)', () => {
    test('every pypto-lsp.* setting but the extension\'s own is one, in the manifest\'s order', () => {
        const declared = declaredRunSettings({
            'pypto-lsp.interpreter': { type: 'string', default: '' },
            'pypto-lsp.runOn': { type: 'string', default: 'onSave' },
            'pypto-lsp.rtol': { type: 'number', default: 0.05, minimum: 0 },
            'pypto-lsp.frobnicate': { type: 'boolean', default: false },
            'pypto-lsp.golden.inputs': { type: 'string', default: '' },
            'pypto-lsp.trace.server': { type: 'string', default: 'off' },
        });
        assert.deepEqual(declared, [
            { key: 'rtol', type: 'number', default: 0.05, minimum: 0 },
            { key: 'frobnicate', type: 'boolean', default: false, minimum: undefined },
        ]);
        assert.deepEqual(
            RUN_SETTINGS.map((s) => s.key).filter((k) => ['rtol', 'timeoutSeconds', 'maxAlloc', 'sanitize'].includes(k)),
            ['rtol', 'timeoutSeconds', 'maxAlloc', 'sanitize'],
        );
    });
    test('a value of the declared type is sent, anything else is the default', () => {
        const flag = { key: 'frobnicate', type: 'boolean', default: false } as const;
        assert.equal(runSettingValue(flag, true), true);
        assert.equal(runSettingValue(flag, 'yes'), false);
        const n = { key: 'n', type: 'number', default: 3, minimum: 1 } as const;
        assert.equal(runSettingValue(n, 2), 2);
        assert.equal(runSettingValue(n, 0), 3);
        assert.equal(runSettingValue(n, Infinity), 3);
        const text = { key: 'name', type: 'string', default: '' } as const;
        assert.equal(runSettingValue(text, ' x '), 'x');
        assert.equal(runSettingValue(text, ''), null);
        assert.equal(runSettingValue(text, 4), null);
    });
    test('every one reaches the server options by its key', () => {
        const s = normaliseSettings(Object.fromEntries(RUN_SETTINGS.map((r) => [r.key, r.default])), ctx, true);
        for (const r of RUN_SETTINGS) {
            assert.ok(r.key in s.server, r.key);
        }
    });
});

describe('interpreter choice', () => {
    test('setting > Python extension > python3', () => {
        assert.deepEqual(chooseInterpreter('/s/python', '/ext/python'), { command: '/s/python', source: 'setting' });
        assert.deepEqual(chooseInterpreter(undefined, '/ext/python'), { command: '/ext/python', source: 'python-extension' });
        assert.deepEqual(chooseInterpreter(undefined, undefined), { command: 'python3', source: 'default' });
        assert.deepEqual(chooseInterpreter('', undefined), { command: 'python3', source: 'default' });
    });
    test('install command and error message', () => {
        assert.equal(installCommand('/v/bin/python', '/src/pypto-lsp'), '/v/bin/python -m pip install -e /src/pypto-lsp');
        assert.equal(installCommand('/my env/python', '/my src'), '"/my env/python" -m pip install -e "/my src"');
        assert.equal(installCommand('python3', undefined), 'python3 -m pip install -e <path to your pypto-lsp checkout>');
        const msg = importErrorMessage({ command: 'python3', source: 'default' }, undefined, "Traceback...\nModuleNotFoundError: No module named 'pypto_lsp'\n");
        assert.match(msg, /not importable with python3 \(the default interpreter\)/);
        assert.match(msg, /— ModuleNotFoundError: No module named 'pypto_lsp'\./);
        assert.match(msg, /Install it with: python3 -m pip install -e <path to your pypto-lsp checkout> \(or: python3 -m pip install pypto-lsp\)/);
        const msg2 = importErrorMessage({ command: '/v/python', source: 'setting' }, '/src/co', '');
        assert.match(msg2, /pypto-lsp\.interpreter setting\)\. Install it with: \/v\/python -m pip install -e \/src\/co \(or/);
        assert.match(importErrorMessage({ command: '/e/python', source: 'python-extension' }, undefined, 'x'), /the Python extension's interpreter/);
    });
    test('the import check code is valid python-looking text that needs __main__', () => {
        assert.match(IMPORT_CHECK_CODE, /import pypto_lsp\n/);
        assert.match(IMPORT_CHECK_CODE, /find_spec\("pypto_lsp.__main__"\)/);
    });
});
