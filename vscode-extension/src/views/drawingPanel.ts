/**
 * A webview panel beside the editor that draws what it is sent (the pictures, the memory map):
 * the page from `page` with the extension's own scripts, the last message kept and sent again
 * when the page (re)loads, every other message from the page handed to `onMessage`.
 */
import * as vscode from 'vscode';
import { makeNonce, PageOptions } from '../core/pictures';

export class DrawingPanel<M> {
    readonly panel: vscode.WebviewPanel;
    private last: M | undefined;

    constructor(
        viewType: string,
        title: string,
        extensionUri: vscode.Uri,
        page: (opts: PageOptions) => string,
        scripts: readonly string[],
        onMessage: (m: unknown) => Promise<void> | void,
        onDispose: () => void,
    ) {
        const root = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
        this.panel = vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Beside, {
            enableScripts: true,
            localResourceRoots: [root],
            retainContextWhenHidden: true,
        });
        const wv = this.panel.webview;
        wv.html = page({
            title,
            scriptUris: scripts.map((f) => wv.asWebviewUri(vscode.Uri.joinPath(root, f)).toString()),
            cspSource: wv.cspSource,
            nonce: makeNonce(),
        });
        wv.onDidReceiveMessage(async (m: unknown) => {
            if (typeof m === 'object' && m !== null && (m as { type?: string }).type === 'ready') {
                if (this.last) {
                    void wv.postMessage(this.last); // the page (re)loaded after data was sent
                }
                return;
            }
            await onMessage(m);
        });
        this.panel.onDidDispose(onDispose);
    }

    post(m: M): void {
        this.last = m;
        void this.panel.webview.postMessage(m);
    }
}
