/** Read `pypto-lsp.*` for a workspace folder and normalise it (logic in core/settings). */
import * as os from 'os';
import * as vscode from 'vscode';
import { ExtensionSettings, normaliseSettings, RawSettings } from '../core/settings';
import { CONFIG_SECTION } from './constants';
import { getConfiguration, isTrusted, workspaceFolders } from './vscodeapi';

/** The folder settings resolve against: the one holding `resource`, else the first one. */
export function settingsFolder(resource?: vscode.Uri): vscode.WorkspaceFolder | undefined {
    if (resource) {
        const f = vscode.workspace.getWorkspaceFolder(resource);
        if (f) {
            return f;
        }
    }
    return workspaceFolders()[0];
}

export function readSettings(resource?: vscode.Uri): ExtensionSettings {
    const folder = settingsFolder(resource);
    const cfg = getConfiguration(CONFIG_SECTION, folder?.uri);
    const raw: RawSettings = {
        interpreter: cfg.get('interpreter'),
        runOn: cfg.get('runOn'),
        rtol: cfg.get('rtol'),
        atol: cfg.get('atol'),
        timeoutSeconds: cfg.get('timeoutSeconds'),
        memory: cfg.get('memory'),
        maxAlloc: cfg.get('maxAlloc'),
        exact: cfg.get('exact'),
        sanitize: cfg.get('sanitize'),
        golden: { inputs: cfg.get('golden.inputs'), expected: cfg.get('golden.expected') },
    };
    return normaliseSettings(raw, { workspaceFolder: folder?.uri.fsPath, home: os.homedir(), env: process.env }, isTrusted());
}

/** Settings whose change is pushed to the running server (the interpreter restarts it instead). */
export const PUSHED_SETTINGS = ['runOn', 'rtol', 'atol', 'timeoutSeconds', 'golden', 'memory', 'maxAlloc', 'exact', 'sanitize'].map((k) => `${CONFIG_SECTION}.${k}`);
export const RESTART_SETTINGS = [`${CONFIG_SECTION}.interpreter`];
