/**
 * The last FileResult per dump uri and the first divergent pass per folder: the
 * state behind the tree view and the status bar. No `vscode` import.
 */
import { FileResult, FolderResult } from './protocol';

export type Listener = (uris: readonly string[]) => void;

/** `file:///a/b/c.py` -> `file:///a/b` */
export function parentUri(uri: string): string {
    const i = uri.lastIndexOf('/');
    return i > 0 ? uri.slice(0, i) : uri;
}

export class ResultStore {
    private readonly results = new Map<string, FileResult>();
    private readonly divergent = new Map<string, string | null>();
    private readonly listeners = new Set<Listener>();

    get(uri: string): FileResult | undefined {
        return this.results.get(uri);
    }

    /** The first divergent pass of a folder (uri), null when the server said there is none, undefined if unknown. */
    firstDivergent(folderUri: string): string | null | undefined {
        return this.divergent.get(folderUri);
    }

    onDidChange(l: Listener): { dispose(): void } {
        this.listeners.add(l);
        return { dispose: () => this.listeners.delete(l) };
    }

    update(r: FileResult): void {
        this.results.set(r.uri, r);
        // The server's idea of the folder's first divergent pass rides along with each file
        // result; only a validated folder can say "none".
        const folder = parentUri(r.uri);
        if (r.first_divergent) {
            this.divergent.set(folder, r.first_divergent);
        } else if (this.divergent.get(folder) === r.uri && r.status !== 'fail' && r.status !== 'error') {
            // the recorded first divergent pass was fixed: forget it (the views fall back to the results)
            this.divergent.delete(folder);
        }
        this.fire([r.uri]);
    }

    updateFolder(folderUri: string, res: FolderResult): void {
        for (const r of res.files) {
            this.results.set(r.uri, r);
        }
        const folder = res.files.length ? parentUri(res.files[0].uri) : folderUri;
        this.divergent.set(folder, res.first_divergent);
        this.fire(res.files.map((r) => r.uri));
    }

    /** Forget everything (e.g. the server restarted with other settings). */
    clear(): void {
        const uris = [...this.results.keys()];
        this.results.clear();
        this.divergent.clear();
        this.fire(uris);
    }

    private fire(uris: readonly string[]): void {
        for (const l of [...this.listeners]) {
            l(uris);
        }
    }
}
