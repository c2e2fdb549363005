/**
 * Coalesce bursts of requests (settings edits, interpreter switches) into one
 * call after things went quiet for `delayMs`. No `vscode` import.
 */
export class Debouncer {
    private timer: ReturnType<typeof setTimeout> | undefined;
    private reasons: string[] = [];

    constructor(
        private readonly delayMs: number,
        private readonly fn: (reasons: string[]) => void,
    ) {}

    /** (Re)start the quiet period; `fn` gets every reason given since the last call. */
    trigger(reason: string): void {
        this.reasons.push(reason);
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            const reasons = this.reasons;
            this.reasons = [];
            this.fn(reasons);
        }, this.delayMs);
    }

    get pending(): boolean {
        return this.timer !== undefined;
    }

    cancel(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
            this.timer = undefined;
        }
        this.reasons = [];
    }
}
