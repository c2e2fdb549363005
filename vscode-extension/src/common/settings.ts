/** Read `pypto-lsp.*` for a workspace folder and normalise it (logic in core/settings). */
import * as os from 'os';
import * as vscode from 'vscode';
import { ExtensionSettings, normaliseSettings, RawSettings, RUN_SETTINGS } from '../core/settings';
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
        golden: { inputs: cfg.get('golden.inputs'), expected: cfg.get('golden.expected') },
    };
    for (const s of RUN_SETTINGS) {
        raw[s.key] = cfg.get(s.key);
    }
    return normaliseSettings(raw, { workspaceFolder: folder?.uri.fsPath, home: os.homedir(), env: process.env }, isTrusted());
}

/** Settings whose change is pushed to the running server (the interpreter restarts it instead). */
export const PUSHED_SETTINGS = ['runOn', 'golden', ...RUN_SETTINGS.map((s) => s.key)].map((k) => `${CONFIG_SECTION}.${k}`);
export const RESTART_SETTINGS = [`${CONFIG_SECTION}.interpreter`];
