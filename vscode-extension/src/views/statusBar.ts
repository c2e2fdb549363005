/** The status bar item of the active dump: verdict + max |Δ|; click validates the pass. */
import * as vscode from 'vscode';
import { CMD } from '../common/constants';
import { ServerState } from '../common/server';
import { resultTooltip, statusBarText } from '../core/format';
import { basenameOfUri } from '../core/protocol';
import { ResultStore } from '../core/results';

export class DumpStatusBar implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private uri: string | undefined;
    private serverState: ServerState = 'stopped';
    private serverReason = '';
    private readonly subs: vscode.Disposable[] = [];

    constructor(private readonly store: ResultStore) {
        this.item = vscode.window.createStatusBarItem('pypto-lsp.status', vscode.StatusBarAlignment.Left, 50);
        this.item.name = 'PyPTO LSP: pass verdict';
        this.subs.push(
            store.onDidChange((uris) => {
                if (this.uri && uris.includes(this.uri)) {
                    this.render();
                }
            }),
        );
    }

    /** The active editor's dump, or undefined to hide the item. */
    setActive(uri: vscode.Uri | undefined): void {
        this.uri = uri?.toString();
        this.render();
    }

    setServerState(state: ServerState, reason: string): void {
        this.serverState = state;
        this.serverReason = reason;
        this.render();
    }

    private render(): void {
        if (!this.uri) {
            this.item.hide();
            return;
        }
        const name = basenameOfUri(this.uri);
        const r = this.store.get(this.uri);
        this.item.backgroundColor = undefined;
        if (this.serverState !== 'running' && !r) {
            const starting = this.serverState === 'starting';
            this.item.text = starting ? '$(sync~spin) PyPTO' : '$(warning) PyPTO';
            this.item.tooltip = starting ? 'PyPTO LSP: the server is starting' : `PyPTO LSP: ${this.serverReason}. Click for the log.`;
            this.item.command = starting ? undefined : CMD.showLogs;
            this.item.show();
            return;
        }
        this.item.text = statusBarText(r);
        this.item.tooltip = `${resultTooltip(r, name)}\n\nClick to validate this pass.`;
        this.item.command = { command: CMD.validateThisPass, title: 'Validate This Pass', arguments: [vscode.Uri.parse(this.uri)] };
        if (r && (r.status === 'fail' || r.status === 'error')) {
            this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        }
        this.item.show();
    }

    dispose(): void {
        for (const s of this.subs) {
            s.dispose();
        }
        this.item.dispose();
    }
}
