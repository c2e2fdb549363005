/**
 * Settings normalisation and the interpreter choice. No `vscode` import: the
 * caller reads the raw values and the environment, this decides.
 */
import * as path from 'path';
import manifest from '../../package.json';
import { RunOn, ServerOptions } from './protocol';

/** The extension's own settings; every other `pypto-lsp.*` setting package.json declares is a run setting. */
export const CLIENT_SETTINGS: readonly string[] = ['interpreter', 'runOn', 'golden.inputs', 'golden.expected', 'trace.server'];

/** A run setting as package.json declares it (written from the server's RunSettings by tools/gen_settings.py). */
export interface RunSetting {
    key: string;
    type: 'number' | 'boolean' | 'string' | readonly string[];
    default: unknown;
    minimum?: number;
    /** the only values it takes (sanitize: true, false or "strict") */
    enum?: readonly unknown[];
}

/** The run settings the manifest declares, in its order: each is read and sent to the server by its key. */
export function declaredRunSettings(properties: Record<string, Record<string, unknown>>): RunSetting[] {
    return Object.entries(properties)
        .filter(([k]) => k.startsWith('pypto-lsp.') && !CLIENT_SETTINGS.includes(k.slice('pypto-lsp.'.length)))
        .map(([k, v]) => ({
            key: k.slice('pypto-lsp.'.length),
            type: v.type as RunSetting['type'],
            default: v.default,
            minimum: typeof v.minimum === 'number' ? v.minimum : undefined,
            ...(Array.isArray(v.enum) ? { enum: v.enum as readonly unknown[] } : {}),
        }));
}

export const RUN_SETTINGS: readonly RunSetting[] = declaredRunSettings(
    manifest.contributes.configuration.properties as unknown as Record<string, Record<string, unknown>>,
);

/** runOn's default, and every run setting's (package.json's). */
export const DEFAULTS: { runOn: RunOn; [runSetting: string]: unknown } = {
    runOn: 'onSave',
    ...Object.fromEntries(RUN_SETTINGS.map((s) => [s.key, s.default])),
};

/** What `workspace.getConfiguration('pypto-lsp')` gave, untyped on purpose (users write anything). */
export interface RawSettings {
    interpreter?: unknown;
    runOn?: unknown;
    golden?: { inputs?: unknown; expected?: unknown } | unknown;
    /** every run setting by its key (RUN_SETTINGS): rtol, atol, timeoutSeconds, memory, maxAlloc, exact, sanitize, ... */
    [runSetting: string]: unknown;
}

export interface ExpandContext {
    /** fs path of the workspace folder settings are resolved against (undefined: none open) */
    workspaceFolder?: string;
    home: string;
    env: Record<string, string | undefined>;
}

export interface ExtensionSettings {
    /** the interpreter setting after expansion; undefined when unset */
    interpreter: string | undefined;
    server: ServerOptions;
}

const RUN_ON: ReadonlySet<string> = new Set(['onSave', 'onType', 'manual']);

/** `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. Unknown variables stay as written. */
export function expandVariables(value: string, ctx: ExpandContext): string {
    let v = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
        if (name === 'workspaceFolder') {
            return ctx.workspaceFolder ?? whole;
        }
        if (name === 'userHome') {
            return ctx.home;
        }
        return ctx.env[envName ?? ''] ?? '';
    });
    if (v === '~' || v.startsWith('~/')) {
        v = ctx.home + v.slice(1);
    }
    return v;
}

/** `maxAlloc`: a size the server parses ("512M", "4G", bytes) or a positive number of bytes; anything else: null (the default). */
function sizeSetting(v: unknown): string | number | null {
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) {
        return v;
    }
    return typeof v === 'string' && /^\s*\d+(\.\d+)?\s*[kmgt]?i?b?\s*$/i.test(v) ? v.trim() : null;
}

/** Run settings whose values are checked here beyond their declared type. */
const SPECIAL: Record<string, (v: unknown) => unknown> = { maxAlloc: sizeSetting };

/**
 * A run setting's value as the server gets it: a value of its declared type (a number within its
 * minimum, finite), else its default; a string setting's empty default is null (the server's default).
 */
export function runSettingValue(s: RunSetting, v: unknown): unknown {
    const special = SPECIAL[s.key];
    if (special) {
        return special(v);
    }
    if (s.enum) {
        return s.enum.includes(v) ? v : s.default;
    }
    if (s.type === 'number') {
        const ok = typeof v === 'number' && Number.isFinite(v) && v >= (s.minimum ?? -Infinity);
        return ok ? v : s.default;
    }
    if (s.type === 'string') {
        const text = typeof v === 'string' ? v.trim() : '';
        return text !== '' ? text : s.default === '' ? null : s.default;
    }
    return typeof v === typeof s.default ? v : s.default;
}

/** A file setting: trimmed, expanded, relative -> against the workspace folder; empty -> null. */
export function resolveFileSetting(v: unknown, ctx: ExpandContext): string | null {
    if (typeof v !== 'string' || v.trim() === '') {
        return null;
    }
    const expanded = expandVariables(v.trim(), ctx);
    if (path.isAbsolute(expanded) || !ctx.workspaceFolder) {
        return expanded;
    }
    return path.resolve(ctx.workspaceFolder, expanded);
}

/**
 * The interpreter setting: a path (absolute, or relative to the workspace folder
 * when it contains a separator) or a bare command name looked up on PATH.
 */
export function resolveInterpreterSetting(v: unknown, ctx: ExpandContext): string | undefined {
    if (typeof v !== 'string' || v.trim() === '') {
        return undefined;
    }
    const expanded = expandVariables(v.trim(), ctx);
    if (path.isAbsolute(expanded) || !/[\\/]/.test(expanded) || !ctx.workspaceFolder) {
        return expanded;
    }
    return path.resolve(ctx.workspaceFolder, expanded);
}

/** Raw settings -> what the extension and the server use. Invalid values fall back to the defaults. */
export function normaliseSettings(raw: RawSettings, ctx: ExpandContext, trusted: boolean): ExtensionSettings {
    const golden = (typeof raw.golden === 'object' && raw.golden !== null ? raw.golden : {}) as {
        inputs?: unknown;
        expected?: unknown;
    };
    const server: ServerOptions = {
        runOn: typeof raw.runOn === 'string' && RUN_ON.has(raw.runOn) ? (raw.runOn as RunOn) : DEFAULTS.runOn,
        golden: {
            inputs: resolveFileSetting(golden.inputs, ctx),
            expected: resolveFileSetting(golden.expected, ctx),
        },
        validation: trusted,
    };
    for (const s of RUN_SETTINGS) {
        server[s.key] = runSettingValue(s, raw[s.key]);
    }
    return { interpreter: resolveInterpreterSetting(raw.interpreter, ctx), server };
}

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterChoice {
    command: string;
    source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = 'python3';

/** setting > the Python extension's active interpreter > python3. */
export function chooseInterpreter(setting: string | undefined, pythonExtension: string | undefined): InterpreterChoice {
    if (setting) {
        return { command: setting, source: 'setting' };
    }
    if (pythonExtension) {
        return { command: pythonExtension, source: 'python-extension' };
    }
    return { command: DEFAULT_INTERPRETER, source: 'default' };
}

/** Does a settings change need a server restart (vs. a didChangeConfiguration push)? */
export function needsRestart(before: ExtensionSettings | undefined, after: ExtensionSettings): boolean {
    return before === undefined || before.interpreter !== after.interpreter;
}

/** Server options equal? (decides whether to push didChangeConfiguration) */
export function sameServerOptions(a: ServerOptions, b: ServerOptions): boolean {
    return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The Python snippet run before starting the server: exits 0 only if the
 * package *and* its `__main__` can be found (a bare namespace directory called
 * pypto_lsp would otherwise pass `import pypto_lsp`), and prints the version.
 */
export const IMPORT_CHECK_CODE =
    'import importlib.util, sys\n' +
    'import pypto_lsp\n' +
    'if importlib.util.find_spec("pypto_lsp.__main__") is None:\n' +
    '    sys.exit("pypto_lsp has no __main__ (not an installed pypto-lsp?): " + repr(list(getattr(pypto_lsp, "__path__", []))))\n' +
    'print(getattr(pypto_lsp, "__version__", "unknown"))\n';

/** The install command shown when the import check fails (`<checkout>` as a placeholder when unknown). */
export function installCommand(interpreter: string, checkout: string | undefined): string {
    const quote = (x: string) => (/\s/.test(x) ? `"${x}"` : x);
    return `${quote(interpreter)} -m pip install -e ${checkout ? quote(checkout) : '<path to your pypto-lsp checkout>'}`;
}

/** The one error message for "pypto_lsp is not importable with this interpreter". */
export function importErrorMessage(choice: InterpreterChoice, checkout: string | undefined, detail: string): string {
    const from =
        choice.source === 'setting'
            ? 'the pypto-lsp.interpreter setting'
            : choice.source === 'python-extension'
              ? "the Python extension's interpreter"
              : 'the default interpreter';
    const short = detail.trim().split('\n').filter((l) => l.trim()).pop() ?? '';
    const py = /\s/.test(choice.command) ? `"${choice.command}"` : choice.command;
    return (
        `PyPTO LSP cannot start: pypto_lsp is not importable with ${choice.command} (${from})` +
        (short ? ` — ${short}` : '') +
        `. Install it with: ${installCommand(choice.command, checkout)} (or: ${py} -m pip install pypto-lsp), or select another interpreter.`
    );
}
