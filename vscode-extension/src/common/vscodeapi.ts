/**
 * Thin wrappers over the VS Code API used by the rest of the extension, so that
 * the call sites read as intent and the API surface we depend on is in one place.
 */
import * as vscode from 'vscode';

export function getConfiguration(section: string, scope?: vscode.ConfigurationScope): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(section, scope);
}

export function registerCommand(id: string, fn: (...args: any[]) => unknown): vscode.Disposable {
    return vscode.commands.registerCommand(id, fn);
}

export function executeCommand<T = unknown>(id: string, ...args: unknown[]): Thenable<T> {
    return vscode.commands.executeCommand<T>(id, ...args);
}

export function setContext(key: string, value: unknown): Thenable<unknown> {
    return vscode.commands.executeCommand('setContext', key, value);
}

export function onDidChangeConfiguration(fn: (e: vscode.ConfigurationChangeEvent) => unknown): vscode.Disposable {
    return vscode.workspace.onDidChangeConfiguration(fn);
}

export function onDidChangeActiveTextEditor(fn: (e: vscode.TextEditor | undefined) => unknown): vscode.Disposable {
    return vscode.window.onDidChangeActiveTextEditor(fn);
}

export function onDidOpenTextDocument(fn: (d: vscode.TextDocument) => unknown): vscode.Disposable {
    return vscode.workspace.onDidOpenTextDocument(fn);
}

export function onDidGrantWorkspaceTrust(fn: () => unknown): vscode.Disposable {
    return vscode.workspace.onDidGrantWorkspaceTrust(fn);
}

export function isTrusted(): boolean {
    return vscode.workspace.isTrusted;
}

export function activeTextEditor(): vscode.TextEditor | undefined {
    return vscode.window.activeTextEditor;
}

export function workspaceFolders(): readonly vscode.WorkspaceFolder[] {
    return vscode.workspace.workspaceFolders ?? [];
}

export function getWorkspaceFolder(uri: vscode.Uri): vscode.WorkspaceFolder | undefined {
    return vscode.workspace.getWorkspaceFolder(uri);
}

export function showErrorMessage<T extends string>(msg: string, ...items: T[]): Thenable<T | undefined> {
    return vscode.window.showErrorMessage(msg, ...items);
}

export function showWarningMessage<T extends string>(msg: string, ...items: T[]): Thenable<T | undefined> {
    return vscode.window.showWarningMessage(msg, ...items);
}

export function showInformationMessage<T extends string>(msg: string, ...items: T[]): Thenable<T | undefined> {
    return vscode.window.showInformationMessage(msg, ...items);
}

export async function readText(uri: vscode.Uri): Promise<string> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
        return open.getText();
    }
    return new TextDecoder('utf-8').decode(await vscode.workspace.fs.readFile(uri));
}

export async function exists(uri: vscode.Uri): Promise<boolean> {
    try {
        await vscode.workspace.fs.stat(uri);
        return true;
    } catch {
        return false;
    }
}

/** Names of the regular files in a folder. */
export async function listFiles(folder: vscode.Uri): Promise<string[]> {
    try {
        const entries = await vscode.workspace.fs.readDirectory(folder);
        return entries.filter(([, t]) => (t & vscode.FileType.File) !== 0).map(([n]) => n);
    } catch {
        return [];
    }
}

export async function openUntitled(language: string, content: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument({ language, content });
    await vscode.window.showTextDocument(doc, { preview: false });
}
