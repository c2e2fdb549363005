/**
 * The "PyPTO Passes" view: every dump of the active dump's folder in pipeline
 * order, with the verdict, max |Δ| and time of its last FileResult, the first
 * divergent pass marked, and two filters (failing only / hide unchanged IR). Whether a pass
 * changed the IR is the server's word (its pass chart's `unchanged`), never computed here.
 */
import * as vscode from 'vscode';
import { CONTEXT, PASSES_VIEW_ID, STATE, TREE_CMD } from '../common/constants';
import { listFiles, registerCommand, setContext } from '../common/vscodeapi';
import { describeResult, resultTooltip, VERDICT_COLOR, VERDICT_ICON } from '../core/format';
import { filterPasses, inferFirstDivergent, isDumpPath, PassEntry, PassFilters, sortPassFiles } from '../core/passes';
import { ResultStore } from '../core/results';

/** A folder's "IR unchanged" flags by file name (the server's pass chart); rejects when unknown. */
export type UnchangedSource = (folder: vscode.Uri) => Promise<ReadonlyMap<string, boolean>>;

export class PassesTreeProvider implements vscode.TreeDataProvider<PassEntry>, vscode.Disposable {
    private readonly changeEmitter = new vscode.EventEmitter<PassEntry | undefined>();
    readonly onDidChangeTreeData = this.changeEmitter.event;
    private folder: vscode.Uri | undefined;
    /** the dump in the active editor, kept selected in the list */
    private active: vscode.Uri | undefined;
    private entries: PassEntry[] = [];
    private shown: PassEntry[] = [];
    private watcher: vscode.FileSystemWatcher | undefined;
    private view: vscode.TreeView<PassEntry> | undefined;
    private refreshTimer: NodeJS.Timeout | undefined;
    /** bumped by every rebuild: a slower, older rebuild must not overwrite a newer one */
    private generation = 0;
    private readonly disposables: vscode.Disposable[] = [];
    private filters: PassFilters;

    constructor(
        private readonly store: ResultStore,
        private readonly state: vscode.Memento,
        private readonly unchangedFlags: UnchangedSource,
    ) {
        this.filters = {
            failingOnly: state.get<boolean>(STATE.failingOnly, false),
            hideUnchanged: state.get<boolean>(STATE.hideUnchanged, false),
        };
        this.disposables.push(store.onDidChange(() => this.scheduleRefresh()));
    }

    /** Create the view and its commands. */
    register(): vscode.Disposable[] {
        this.view = vscode.window.createTreeView(PASSES_VIEW_ID, { treeDataProvider: this, showCollapseAll: false });
        this.disposables.push(this.view.onDidChangeVisibility(() => this.revealActive()));
        void setContext(CONTEXT.failingOnly, this.filters.failingOnly);
        void setContext(CONTEXT.hideUnchanged, this.filters.hideUnchanged);
        const toggle = (key: keyof PassFilters, value: boolean) => () => this.setFilter(key, value);
        return [
            this.view,
            this,
            registerCommand(TREE_CMD.failingOnlyOn, toggle('failingOnly', true)),
            registerCommand(TREE_CMD.failingOnlyOff, toggle('failingOnly', false)),
            registerCommand(TREE_CMD.hideUnchangedOn, toggle('hideUnchanged', true)),
            registerCommand(TREE_CMD.hideUnchangedOff, toggle('hideUnchanged', false)),
            registerCommand(TREE_CMD.refresh, () => this.refresh()),
        ];
    }

    /** Re-list the folder and ask the server again (e.g. once it is running). */
    refresh(): void {
        this.scheduleRefresh(0);
    }

    get currentFolder(): vscode.Uri | undefined {
        return this.folder;
    }

    /** Show the folder of this dump (no-op for other files, so the list stays while you look elsewhere). */
    followDocument(uri: vscode.Uri | undefined, isDump: boolean): void {
        if (!uri || uri.scheme !== 'file' || !isDump) {
            return;
        }
        this.active = uri;
        const folder = vscode.Uri.joinPath(uri, '..');
        if (this.folder?.toString() !== folder.toString()) {
            this.setFolder(folder);
        } else {
            this.revealActive();
        }
    }

    setFolder(folder: vscode.Uri): void {
        this.folder = folder;
        this.watcher?.dispose();
        this.watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, '*.py'));
        const onFs = () => this.scheduleRefresh();
        this.watcher.onDidCreate(onFs);
        this.watcher.onDidDelete(onFs);
        this.watcher.onDidChange(onFs);
        this.scheduleRefresh(0);
    }

    private async setFilter(key: keyof PassFilters, value: boolean): Promise<void> {
        this.filters = { ...this.filters, [key]: value };
        await this.state.update(key === 'failingOnly' ? STATE.failingOnly : STATE.hideUnchanged, value);
        await setContext(key === 'failingOnly' ? CONTEXT.failingOnly : CONTEXT.hideUnchanged, value);
        this.scheduleRefresh(0);
    }

    private scheduleRefresh(delay = 100): void {
        if (this.refreshTimer) {
            clearTimeout(this.refreshTimer);
        }
        this.refreshTimer = setTimeout(() => {
            this.refreshTimer = undefined;
            void this.rebuild();
        }, delay);
    }

    /** Re-list the folder, attach results and IR-change flags, apply the filters, redraw. */
    private async rebuild(): Promise<void> {
        const folder = this.folder;
        const generation = ++this.generation;
        if (!folder) {
            this.entries = [];
            this.shown = [];
            this.changeEmitter.fire(undefined);
            return;
        }
        const names = sortPassFiles(await listFiles(folder));
        const entries: PassEntry[] = names.map((name) => ({
            name,
            uri: vscode.Uri.joinPath(folder, name).toString(),
            firstDivergent: false,
        }));
        let flags: ReadonlyMap<string, boolean> | undefined;
        try {
            flags = await this.unchangedFlags(folder);
        } catch {
            flags = undefined; // the server is not running (yet): not known
        }
        for (const e of entries) {
            const unchanged = flags?.get(e.name);
            e.changed = unchanged === undefined ? undefined : !unchanged;
        }
        if (generation !== this.generation) {
            return; // a newer rebuild (new results, another folder) is under way
        }
        // results are read after the awaits so that none that arrived meanwhile is missed
        for (const e of entries) {
            e.result = this.store.get(e.uri);
        }
        const known = this.store.firstDivergent(folder.toString());
        const divergent = known === undefined ? inferFirstDivergent(entries) : known ?? undefined;
        for (const e of entries) {
            e.firstDivergent = divergent !== undefined && e.uri === divergent;
        }
        this.entries = entries;
        this.shown = filterPasses(entries, this.filters);
        if (this.view) {
            this.view.description = vscode.workspace.asRelativePath(folder, true);
            const hidden = entries.length - this.shown.length;
            this.view.message =
                entries.length === 0
                    ? 'No dump files in this folder.'
                    : this.shown.length === 0
                      ? `All ${entries.length} passes are hidden by the filters.`
                      : undefined;
            if (hidden > 0 && this.shown.length > 0) {
                this.view.description += ` (${hidden} hidden)`;
            }
        }
        this.changeEmitter.fire(undefined);
        this.revealActive();
    }

    /** Entries in pipeline order (unfiltered); for commands such as Compare with Previous. */
    allEntries(): readonly PassEntry[] {
        return this.entries;
    }

    getChildren(element?: PassEntry): PassEntry[] {
        return element ? [] : this.shown;
    }

    getParent(): undefined {
        return undefined;
    }

    getTreeItem(e: PassEntry): vscode.TreeItem {
        const label: vscode.TreeItemLabel = e.firstDivergent ? { label: e.name, highlights: [[0, e.name.length]] } : { label: e.name };
        const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
        const r = e.result;
        const parts = r ? [describeResult(r)] : [];
        if (e.changed === false) {
            parts.push('IR unchanged');
        }
        if (e.firstDivergent) {
            parts.unshift('◀ first divergent');
        }
        item.description = parts.join(' · ');
        item.iconPath = r
            ? new vscode.ThemeIcon(VERDICT_ICON[r.status], VERDICT_COLOR[r.status] ? new vscode.ThemeColor(VERDICT_COLOR[r.status]!) : undefined)
            : new vscode.ThemeIcon('circle-outline');
        const tooltip = new vscode.MarkdownString(undefined, true);
        tooltip.appendCodeblock(resultTooltip(r, e.name), 'text');
        if (e.firstDivergent) {
            tooltip.appendMarkdown('\n$(debug-breakpoint) **first divergent pass**');
        }
        if (e.changed === false) {
            tooltip.appendMarkdown('\n\nIR identical to the previous pass (comments and memory addresses ignored)');
        }
        item.tooltip = tooltip;
        item.resourceUri = vscode.Uri.parse(e.uri);
        item.id = e.uri;
        const index = this.entries.indexOf(e);
        item.contextValue = index > 0 ? 'pass.hasPrevious' : 'pass';
        item.command = { command: 'vscode.open', title: 'Open Dump', arguments: [vscode.Uri.parse(e.uri)] };
        return item;
    }

    /** Scroll the list to the active dump and select it (the list can be longer than the view). */
    private revealActive(): void {
        if (!this.view || !this.view.visible || !this.active) {
            return;
        }
        const uri = this.active.toString();
        const e = this.shown.find((x) => x.uri === uri);
        if (e) {
            void this.view.reveal(e, { select: true, focus: false }).then(undefined, () => undefined);
        }
    }

    dispose(): void {
        this.watcher?.dispose();
        if (this.refreshTimer) {
            clearTimeout(this.refreshTimer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
        this.changeEmitter.dispose();
    }
}

/** Is this uri a dump by its path (cheap, no text)? */
export function isDumpUri(uri: vscode.Uri): boolean {
    return uri.scheme === 'file' && isDumpPath(uri.fsPath);
}
