/**
 * Interpreter discovery: the `pypto-lsp.interpreter` setting, else the Python
 * extension's active environment (through its public API, when installed), else
 * python3. Also the import check run before the server is started.
 */
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { chooseInterpreter, IMPORT_CHECK_CODE, InterpreterChoice } from '../core/settings';
import { IMPORT_CHECK_TIMEOUT_MS } from './constants';
import { traceInfo, traceVerbose, traceWarn } from './log/logging';

const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The parts of the Python extension's `environments` API we use (duck-typed, no npm dependency). */
interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string } | undefined;
    resolveEnvironment(env: { id: string; path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

async function pythonApi(): Promise<PythonEnvironmentsApi | undefined> {
    const ext = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
    if (!ext) {
        return undefined;
    }
    try {
        if (!ext.isActive) {
            await ext.activate();
        }
        const env = (ext.exports as { environments?: PythonEnvironmentsApi } | undefined)?.environments;
        return env && typeof env.getActiveEnvironmentPath === 'function' ? env : undefined;
    } catch (e) {
        traceWarn('the Python extension did not activate:', e);
        return undefined;
    }
}

export function hasPythonExtension(): boolean {
    return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

/** The Python extension's active interpreter for `resource`, if that extension is present and knows one. */
export async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
    const api = await pythonApi();
    if (!api) {
        return undefined;
    }
    try {
        const envPath = api.getActiveEnvironmentPath(resource);
        if (!envPath) {
            return undefined;
        }
        const env = await api.resolveEnvironment(envPath);
        return env?.executable?.uri?.fsPath ?? envPath.path;
    } catch (e) {
        traceWarn('could not ask the Python extension for its interpreter:', e);
        return undefined;
    }
}

export async function resolveInterpreter(setting: string | undefined, resource?: vscode.Uri): Promise<InterpreterChoice> {
    const fromExt = setting ? undefined : await pythonExtensionInterpreter(resource);
    const choice = chooseInterpreter(setting, fromExt);
    traceInfo(`interpreter: ${choice.command} (from ${choice.source})`);
    return choice;
}

/** Fires when the Python extension's active interpreter changes (no-op without that extension). */
export async function onDidChangePythonInterpreter(fn: () => void): Promise<vscode.Disposable> {
    const api = await pythonApi();
    if (!api || !api.onDidChangeActiveEnvironmentPath) {
        return new vscode.Disposable(() => undefined);
    }
    return api.onDidChangeActiveEnvironmentPath(() => fn());
}

export interface ImportCheck {
    ok: boolean;
    /** pypto_lsp.__version__ when ok */
    version?: string;
    /** stderr / spawn error when not ok */
    detail: string;
}

/** `<interpreter> -c IMPORT_CHECK_CODE`: can this interpreter run `-m pypto_lsp serve`? */
export function checkImport(interpreter: string, cwd?: string): Promise<ImportCheck> {
    return new Promise((resolve) => {
        execFile(
            interpreter,
            ['-c', IMPORT_CHECK_CODE],
            { timeout: IMPORT_CHECK_TIMEOUT_MS, cwd, windowsHide: true },
            (err, stdout, stderr) => {
                if (err) {
                    const code = (err as NodeJS.ErrnoException).code;
                    const detail =
                        code === 'ENOENT'
                            ? `interpreter not found: ${interpreter}`
                            : `${String(stderr || '').trim() || err.message}`;
                    traceWarn(`import check failed with ${interpreter}: ${detail}`);
                    resolve({ ok: false, detail });
                    return;
                }
                const version = String(stdout).trim().split('\n').pop() ?? '';
                traceVerbose(`import check ok with ${interpreter}: pypto_lsp ${version}`);
                resolve({ ok: true, version, detail: '' });
            },
        );
    });
}

/**
 * "Select Interpreter": the Python extension's picker when it is installed (the
 * server follows its choice), else a file picker that writes `pypto-lsp.interpreter`.
 */
export async function selectInterpreter(): Promise<void> {
    if (hasPythonExtension()) {
        await vscode.commands.executeCommand('python.setInterpreter');
        return;
    }
    const picked = await vscode.window.showOpenDialog({
        title: 'Select the Python interpreter that has pypto-lsp installed',
        canSelectFiles: true,
        canSelectFolders: false,
        canSelectMany: false,
        openLabel: 'Use this interpreter',
    });
    if (!picked || picked.length === 0) {
        return;
    }
    const target = vscode.workspace.workspaceFolders?.length
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration('pypto-lsp').update('interpreter', picked[0].fsPath, target);
}
