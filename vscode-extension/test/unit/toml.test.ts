import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { normaliseRelDir, readStringKey, tomlCandidateDirs, tomlPath, tomlString, upsertCase } from '../../src/core/toml';

const golden = { dumps: 'passes_dump', inputs: 'tensors.pt', expected: 'expected.pt' };

describe('toml values', () => {
    test('strings are escaped as TOML basic strings', () => {
        assert.equal(tomlString('a/b.pt'), '"a/b.pt"');
        assert.equal(tomlString('C:\\g\\"x".pt'), '"C:\\\\g\\\\\\"x\\".pt"');
    });
    test('reading a string key', () => {
        assert.equal(readStringKey('dumps = "a/b"', 'dumps'), 'a/b');
        assert.equal(readStringKey("  dumps='a\\b'  # c", 'dumps'), 'a\\b');
        assert.equal(readStringKey('"dumps" = "x" # "y"', 'dumps'), 'x');
        assert.equal(readStringKey('inputs = "C:\\\\g\\\\in.pt"', 'inputs'), 'C:\\g\\in.pt');
        assert.equal(readStringKey('dumpsx = "a"', 'dumps'), undefined);
        assert.equal(readStringKey('dumps = 3', 'dumps'), undefined);
        assert.equal(readStringKey('# dumps = "a"', 'dumps'), undefined);
    });
    test('folder normalisation', () => {
        assert.equal(normaliseRelDir('./out/passes_dump/'), 'out/passes_dump');
        assert.equal(normaliseRelDir('out\\passes_dump'), 'out/passes_dump');
        assert.equal(normaliseRelDir('./'), '.');
    });
});

describe('upsertCase', () => {
    test('a new file gets one [[cases]] table', () => {
        assert.equal(upsertCase('', golden), '[[cases]]\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\n');
    });
    test('another dumps folder is appended after a blank line, the rest untouched', () => {
        const before = '# golden tensors\n[[cases]]\ndumps = "a/passes_dump"\ninputs = "a/in.pt"\nexpected = "a/exp.pt"\nrtol = 1e-3\n\n\n';
        const after = upsertCase(before, golden);
        assert.equal(
            after,
            '# golden tensors\n[[cases]]\ndumps = "a/passes_dump"\ninputs = "a/in.pt"\nexpected = "a/exp.pt"\nrtol = 1e-3\n\n' +
                '[[cases]]\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\n',
        );
    });
    test('the same dumps folder is updated in place, keeping its other keys and comments', () => {
        const before =
            '[[cases]]\ndumps = "./passes_dump/"   # the 910B run\ninputs = "old_in.pt"\nentry = "scope3"\nexpected = \'old_exp.pt\'\natol = 0.1\n\n[tool]\nx = 1\n';
        const after = upsertCase(before, golden);
        assert.equal(
            after,
            '[[cases]]\ndumps = "./passes_dump/"   # the 910B run\ninputs = "tensors.pt"\nentry = "scope3"\nexpected = "expected.pt"\natol = 0.1\n\n[tool]\nx = 1\n',
        );
    });
    test('missing inputs/expected keys are inserted after dumps', () => {
        const before = '[[cases]]\nentry = "main"\ndumps = "passes_dump"\n[[cases]]\ndumps = "other"\n';
        assert.equal(
            upsertCase(before, golden),
            '[[cases]]\nentry = "main"\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\n[[cases]]\ndumps = "other"\n',
        );
    });
    test('a [cases] lookalike or a dumps key in another table is not matched', () => {
        const before = '[other]\ndumps = "passes_dump"\n';
        assert.equal(upsertCase(before, golden), before + '\n[[cases]]\ndumps = "passes_dump"\ninputs = "tensors.pt"\nexpected = "expected.pt"\n');
    });
    test('CRLF files stay CRLF', () => {
        const after = upsertCase('[tool]\r\nx = 1\r\n', golden);
        assert.ok(after.includes('\r\n[[cases]]\r\ndumps = "passes_dump"\r\n'));
        assert.ok(!/[^\r]\n/.test(after));
    });
    test('idempotent', () => {
        const once = upsertCase('', golden);
        assert.equal(upsertCase(once, golden), once);
    });
});

describe('toml paths and location', () => {
    test('paths are relative with forward slashes inside the root, absolute outside', () => {
        assert.equal(tomlPath('/ws/run', '/ws/run/passes_dump'), 'passes_dump');
        assert.equal(tomlPath('/ws/run', '/ws/golden/in.pt', '/ws'), '../golden/in.pt');
        assert.equal(tomlPath('/ws/run', '/data/in.pt', '/ws'), '/data/in.pt');
        assert.equal(tomlPath('/ws/run', '/data/in.pt'), '../../data/in.pt');
    });
    test('candidate folders: from the dumps parent up to the workspace root', () => {
        assert.deepEqual(tomlCandidateDirs('/ws/build/qwen3/passes_dump', '/ws'), ['/ws/build/qwen3', '/ws/build', '/ws']);
        assert.deepEqual(tomlCandidateDirs('/ws/passes_dump', '/ws'), ['/ws']);
        assert.deepEqual(tomlCandidateDirs('/elsewhere/passes_dump', '/ws'), ['/elsewhere']);
        assert.deepEqual(tomlCandidateDirs('/x/y/passes_dump', undefined), ['/x/y']);
    });
});
