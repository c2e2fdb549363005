// workbench.js — drive a real VS Code workbench (code-server + headless Chromium
// through playwright-core) for the extension's end-to-end test. One Workbench =
// one fresh code-server (own user-data, extensions dir, XDG dirs) serving one folder.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const { spawn, spawnSync } = require('child_process');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const p = s.address().port;
            s.close(() => resolve(p));
        });
    });
}

/** Everything the checks read from the DOM, in one page.evaluate (VS Code 1.100 workbench classes). */
function snapshotInPage() {
    const txt = (el) => ((el && (el.innerText || el.textContent)) || '').replace(/\s+/g, ' ').trim();
    const all = (sel, root = document) => Array.from(root.querySelectorAll(sel));
    const editor =
        document.querySelector('.editor-group-container.active .editor-instance .monaco-editor') ||
        document.querySelector('.editor-instance .monaco-editor');
    const lineNumbers = editor ? all('.margin-view-overlays .line-numbers', editor) : [];
    const lenses = (editor ? all('.codelens-decoration', editor) : []).map((el) => {
        const r = el.getBoundingClientRect();
        let line = null;
        let best = Infinity;
        for (const ln of lineNumbers) {
            const lr = ln.getBoundingClientRect();
            if (lr.top >= r.bottom - 2 && lr.top - r.bottom < best) {
                best = lr.top - r.bottom;
                line = Number(txt(ln)) || null;
            }
        }
        return { text: txt(el), links: all('a', el).map(txt), line };
    });
    const problems = all('.markers-panel .monaco-list-row').map((row) => ({
        text: txt(row),
        aria: row.getAttribute('aria-label') || '',
        marker: !!row.querySelector('.marker-icon, .codicon-error, .codicon-warning, .codicon-info'),
    }));
    const notifications = all('.notifications-toasts .notification-list-item, .notifications-center .notification-list-item').map((n) => ({
        message: txt(n.querySelector('.notification-list-item-message')) || txt(n),
        buttons: all('.monaco-button', n).map(txt).filter(Boolean),
    }));
    const statusBar = all('.statusbar-item').map((el) => ({ id: el.id, text: txt(el), aria: el.getAttribute('aria-label') || '' }));
    // the "PyPTO Passes" pane in the explorer
    let passes = null;
    for (const pane of all('.pane')) {
        const header = pane.querySelector('.pane-header');
        if (header && /PyPTO Passes/i.test(txt(header) + ' ' + (header.getAttribute('aria-label') || ''))) {
            passes = {
                expanded: header.getAttribute('aria-expanded') === 'true',
                description: txt(header.querySelector('.description')),
                message: txt(pane.querySelector('.message')),
                rows: all('.monaco-list-row', pane).map((row) => ({
                    label: txt(row.querySelector('.label-name')) || txt(row.querySelector('.monaco-icon-label')),
                    description: txt(row.querySelector('.label-description')),
                    icon: (row.querySelector('.custom-view-tree-node-item-icon, .codicon') || { className: '' }).className,
                    aria: row.getAttribute('aria-label') || '',
                })),
            };
        }
    }
    const tab = document.querySelector('.tabs-container .tab.active');
    return {
        title: document.title,
        activeTab: txt(tab),
        lenses,
        problems,
        notifications,
        statusBar,
        passes,
        squiggles: editor ? { error: all('.squiggly-error', editor).length, warning: all('.squiggly-warning', editor).length } : {},
    };
}

class Workbench {
    constructor(opts) {
        this.codeServer = opts.codeServer;
        this.chromium = opts.chromium || '/usr/bin/chromium';
        this.playwrightDir = opts.playwrightDir;
        this.out = opts.out;
        this.log = opts.log || ((m) => console.error(m));
        this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pypto-e2e-vscode-'));
        this.udd = path.join(this.tmp, 'user-data');
        this.extDir = path.join(this.tmp, 'extensions');
        this.cs = null;
        this.ctx = null;
        this.page = null;
        this.consoleErrors = [];
        fs.mkdirSync(path.join(this.udd, 'User'), { recursive: true });
        fs.mkdirSync(this.extDir, { recursive: true });
        fs.mkdirSync(this.out, { recursive: true });
    }

    env(extra) {
        return {
            ...process.env,
            ...extra,
            XDG_CONFIG_HOME: path.join(this.tmp, 'xdg-config'),
            XDG_DATA_HOME: path.join(this.tmp, 'xdg-data'),
            XDG_CACHE_HOME: path.join(this.tmp, 'xdg-cache'),
        };
    }

    /** Install the .vsix into this workbench's own extensions dir. Returns code-server's output. */
    install(vsix) {
        const conf = this.configFile();
        const r = spawnSync(this.codeServer, ['--config', conf, '--user-data-dir', this.udd, '--extensions-dir', this.extDir, '--install-extension', vsix, '--force'], {
            env: this.env({}),
            encoding: 'utf8',
            timeout: 180000,
        });
        return { status: r.status, output: `${r.stdout || ''}${r.stderr || ''}`.trim() };
    }

    installedExtensions() {
        const r = spawnSync(this.codeServer, ['--config', this.configFile(), '--extensions-dir', this.extDir, '--list-extensions', '--show-versions'], {
            env: this.env({}),
            encoding: 'utf8',
            timeout: 60000,
        });
        return (r.stdout || '').trim().split('\n').filter(Boolean);
    }

    configFile() {
        const f = path.join(this.tmp, 'code-server.yaml');
        if (!fs.existsSync(f)) {
            fs.writeFileSync(f, 'auth: none\ncert: false\n');
        }
        return f;
    }

    /** Start code-server on `folder` and load the workbench in Chromium. */
    async start(folder, settings, env) {
        const base = {
            'security.workspace.trust.enabled': false,
            'workbench.startupEditor': 'none',
            'workbench.tips.enabled': false,
            'workbench.enableExperiments': false,
            'extensions.autoCheckUpdates': false,
            'extensions.autoUpdate': false,
            'extensions.ignoreRecommendations': true,
            'telemetry.telemetryLevel': 'off',
            'update.mode': 'none',
            'editor.codeLens': true,
            'editor.minimap.enabled': false,
            'chat.commandCenter.enabled': false,
            'workbench.colorTheme': 'Default Light Modern',
            'window.commandCenter': false,
            'editor.autoClosingBrackets': 'never',
            'editor.autoClosingQuotes': 'never',
            'editor.autoSurround': 'never',
            'editor.autoIndent': 'none',
            'editor.quickSuggestions': { other: false, comments: false, strings: false },
            'editor.suggestOnTriggerCharacters': false,
            'files.autoSave': 'off',
            ...settings,
        };
        fs.writeFileSync(path.join(this.udd, 'User/settings.json'), JSON.stringify(base, null, 2));
        const port = await freePort();
        const csLog = fs.openSync(path.join(this.out, 'code-server.log'), 'w');
        const args = [
            '--config', this.configFile(), '--user-data-dir', this.udd, '--extensions-dir', this.extDir,
            '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
            '--disable-getting-started-override', '--disable-proxy', '--ignore-last-opened', folder,
        ];
        if (!base['security.workspace.trust.enabled']) args.splice(args.length - 1, 0, '--disable-workspace-trust');
        this.cs = spawn(this.codeServer, args, { env: this.env(env), stdio: ['ignore', csLog, csLog], detached: true });
        fs.closeSync(csLog);
        const url = `http://127.0.0.1:${port}`;
        const deadline = Date.now() + 60000;
        for (;;) {
            if (this.cs.exitCode !== null) throw new Error(`code-server exited early (${this.cs.exitCode}); see code-server.log`);
            try {
                if ((await fetch(url + '/healthz')).ok) break;
            } catch (_) { /* not yet */ }
            if (Date.now() > deadline) throw new Error('code-server did not answer /healthz within 60 s');
            await sleep(250);
        }
        const { chromium } = require(require.resolve('playwright-core', { paths: [this.playwrightDir] }));
        this.ctx = await chromium.launchPersistentContext(path.join(this.tmp, 'chromium'), {
            executablePath: this.chromium,
            headless: true,
            args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
            viewport: { width: 1920, height: 1000 },
            env: { ...process.env, XDG_CONFIG_HOME: path.join(this.tmp, 'xdg-config'), XDG_CACHE_HOME: path.join(this.tmp, 'xdg-cache') },
        });
        this.page = this.ctx.pages()[0] || (await this.ctx.newPage());
        this.page.on('pageerror', (e) => this.consoleErrors.push(String(e).slice(0, 300)));
        // every notification message that ever appears (a toast cleared or gone before the next
        // snapshot included): window.__e2eNotifications, read by seenNotifications()
        await this.page.addInitScript(() => {
            const seen = (window.__e2eNotifications = []);
            const record = (root) => {
                if (!root || !root.querySelectorAll) return;
                const items = root.matches && root.matches('.notification-list-item-message') ? [root] : [];
                for (const el of [...items, ...root.querySelectorAll('.notification-list-item-message')]) {
                    const text = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
                    if (text && !seen.includes(text)) seen.push(text);
                }
            };
            const start = () => new MutationObserver((muts) => {
                for (const m of muts) {
                    if (m.type === 'characterData') record(m.target.parentElement);
                    for (const n of m.addedNodes) record(n.nodeType === 1 ? n : n.parentElement);
                }
            }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
            if (document.documentElement) start(); else document.addEventListener('DOMContentLoaded', start);
        });
        await this.page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded', timeout: 60000 });
        await this.page.waitForSelector('.monaco-workbench .part.editor', { timeout: 60000 });
        await this.page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60000 }).catch(() => {});
        this.folder = folder;
    }

    snapshot() {
        return this.page.evaluate(snapshotInPage);
    }

    /** Poll the DOM until pred(snapshot) is truthy; returns {ok, snap}. */
    async waitFor(pred, timeoutMs) {
        const end = Date.now() + timeoutMs;
        let snap;
        for (;;) {
            snap = await this.snapshot();
            let ok = false;
            try { ok = !!pred(snap); } catch (_) { ok = false; }
            if (ok) return { ok: true, snap };
            if (Date.now() > end) return { ok: false, snap };
            await sleep(250);
        }
    }

    async quickOpen(rel) {
        const p = this.page;
        for (let attempt = 0; attempt < 2; attempt++) {
            try {
                await p.keyboard.press('Control+P');
                const input = p.locator('.quick-input-widget input[type="text"]').first();
                await input.waitFor({ state: 'visible', timeout: 15000 });
                await input.fill(rel);
                await p.waitForSelector('.quick-input-widget .quick-input-list .monaco-list-row', { timeout: 15000 });
                await sleep(300);
                await p.keyboard.press('Enter');
                await p.waitForFunction((n) => {
                    const tab = document.querySelector('.tabs-container .tab.active');
                    return tab && tab.textContent.includes(n);
                }, path.basename(rel), { timeout: 15000 });
                return;
            } catch (e) {
                if (attempt) throw e;
                await p.keyboard.press('Escape');
                await sleep(1000);
            }
        }
    }

    /** Run a command by its palette title ("PyPTO LSP: Validate All Passes"). */
    async runCommand(title) {
        const p = this.page;
        await p.keyboard.press('F1');
        const input = p.locator('.quick-input-widget input[type="text"]').first();
        await input.waitFor({ state: 'visible', timeout: 15000 });
        await input.fill('>' + title);
        await p.waitForFunction((t) => Array.from(document.querySelectorAll('.quick-input-widget .quick-input-list .monaco-list-row'))
            .some((r) => (r.getAttribute('aria-label') || r.textContent || '').includes(t)), title, { timeout: 15000 });
        await sleep(300);
        await p.keyboard.press('Enter');
    }

    /** The palette entries matching `prefix` (closes the palette again). */
    async paletteEntries(prefix) {
        const p = this.page;
        await p.keyboard.press('F1');
        const input = p.locator('.quick-input-widget input[type="text"]').first();
        await input.waitFor({ state: 'visible', timeout: 15000 });
        await input.fill('>' + prefix);
        await sleep(1200);
        const rows = await p.evaluate(() => Array.from(document.querySelectorAll('.quick-input-widget .quick-input-list .monaco-list-row'))
            .map((r) => (r.getAttribute('aria-label') || r.textContent || '').trim()));
        await p.keyboard.press('Escape');
        return rows;
    }

    /** Expand the "PyPTO Passes" view and fold the file explorer above it so the list has room. */
    async showPassesView() {
        await this.runCommand('Focus on PyPTO Passes View');
        await sleep(500);
        await this.page.evaluate(() => {
            const folders = document.querySelector('.explorer-folders-view');
            const pane = folders && folders.closest('.pane');
            const header = pane && pane.querySelector('.pane-header');
            if (header && header.getAttribute('aria-expanded') === 'true') header.click();
        });
        await sleep(300);
        // widen the side bar (drag its sash) so that verdicts and diffs are readable in screenshots
        const sash = await this.page.evaluate(() => {
            const bar = document.querySelector('.part.sidebar');
            if (!bar) return null;
            const right = bar.getBoundingClientRect().right;
            const cands = Array.from(document.querySelectorAll('.monaco-sash.vertical')).map((el) => el.getBoundingClientRect())
                .filter((r) => r.height > 200 && Math.abs(r.left + r.width / 2 - right) < 6);
            return cands.length ? { x: cands[0].left + cands[0].width / 2, y: cands[0].top + cands[0].height / 2 } : null;
        });
        if (sash) {
            await this.page.mouse.move(sash.x, sash.y);
            await this.page.mouse.down();
            await this.page.mouse.move(sash.x + 230, sash.y, { steps: 8 });
            await this.page.mouse.up();
            await sleep(300);
        }
        await this.focusEditor();
    }

    /** Click a title-bar action of the PyPTO Passes view by its tooltip (aria-label). */
    async clickPassesAction(label) {
        const header = this.page.locator('.pane-header', { hasText: 'PyPTO Passes' }).first();
        await header.hover();
        const action = header.locator(`.actions a[aria-label="${label}"], .actions .action-label[aria-label="${label}"]`).first();
        await action.waitFor({ state: 'attached', timeout: 5000 });
        await action.click({ force: true });
        await sleep(600);
    }

    /** Answer one of VS Code's open dialogs (the quick-input "simple" dialog in the browser) with a full path. */
    async pickFile(fullPath) {
        const p = this.page;
        const input = p.locator('.quick-input-widget input[type="text"]').first();
        await input.waitFor({ state: 'visible', timeout: 15000 });
        await sleep(500);
        await input.fill(fullPath);
        await sleep(800);
        await p.keyboard.press('Enter');
        await sleep(1200);
    }

    async focusEditor() {
        await this.page.keyboard.press('Control+1');
        await sleep(200);
    }

    async showProblems() {
        const visible = await this.page.locator('.markers-panel').isVisible().catch(() => false);
        if (!visible) {
            await this.page.keyboard.press('Control+Shift+M');
            await this.page.waitForSelector('.markers-panel', { state: 'visible', timeout: 10000 }).catch(() => {});
        }
        await this.focusEditor();
    }

    /** Select the first match of `find` in the active editor (find widget) and type `replacement` over it. */
    async replaceText(find, replacement) {
        const p = this.page;
        await this.focusEditor();
        await p.keyboard.press('Control+Home');
        await p.keyboard.press('Control+F');
        const input = p.locator('.editor-instance .find-widget textarea, .editor-instance .find-widget input').first();
        await input.waitFor({ state: 'visible', timeout: 10000 });
        await input.fill(find);
        await sleep(300);
        await p.keyboard.press('Enter');
        await sleep(200);
        await p.keyboard.press('Escape');
        await sleep(200);
        await p.keyboard.type(replacement, { delay: 5 });
    }

    /** Click the code lens link whose text matches re (mouse at its centre: locator.click can scroll Monaco). */
    async clickLens(re, timeoutMs = 15000) {
        // lenses are re-requested after an edit and briefly absent: look again until the deadline
        const links = this.page.locator('.editor-instance .monaco-editor .codelens-decoration a');
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            const n = await links.count();
            for (let i = 0; i < n; i++) {
                const t = (await links.nth(i).textContent()) || '';
                if (re.test(t)) {
                    let box = await links.nth(i).boundingBox();
                    if (!box) continue; // in an editor that is not showing
                    const vp = this.page.viewportSize();
                    if (vp && box.x + box.width / 2 > vp.width) {
                        // late in a long lens row: past the editor's edge until scrolled to
                        await links.nth(i).scrollIntoViewIfNeeded().catch(() => {});
                        box = await links.nth(i).boundingBox();
                        if (!box) continue;
                    }
                    await this.page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
                    return t;
                }
            }
            if (Date.now() > deadline) throw new Error(`no lens link matching ${re}`);
            await sleep(250);
        }
    }

    async clickNotificationButton(re) {
        const buttons = this.page.locator('.notifications-toasts .notification-list-item .monaco-button');
        const n = await buttons.count();
        for (let i = 0; i < n; i++) {
            if (re.test((await buttons.nth(i).textContent()) || '')) {
                await buttons.nth(i).click();
                return true;
            }
        }
        return false;
    }

    async screenshot(name) {
        const f = path.join(this.out, name);
        await this.page.screenshot({ path: f });
        return f;
    }

    /** Copy VS Code's logs (extension host, our output channel) into out/vscode-logs. */
    collectLogs() {
        const logs = path.join(this.udd, 'logs');
        const dest = path.join(this.out, 'vscode-logs');
        fs.mkdirSync(dest, { recursive: true });
        const walk = (d) => {
            for (const f of fs.readdirSync(d, { withFileTypes: true })) {
                const p = path.join(d, f.name);
                if (f.isDirectory()) walk(p);
                else if (/\.log$/.test(f.name)) fs.copyFileSync(p, path.join(dest, path.relative(logs, p).replace(/[\\/]/g, '__')));
            }
        };
        if (fs.existsSync(logs)) walk(logs);
        return dest;
    }

    /** Text of our "PyPTO LSP" output channel log (empty if not written yet). */
    extensionLog() {
        const logs = path.join(this.udd, 'logs');
        let text = '';
        const walk = (d) => {
            for (const f of fs.readdirSync(d, { withFileTypes: true })) {
                const p = path.join(d, f.name);
                if (f.isDirectory()) walk(p);
                else if (/PyPTO LSP\.log$/.test(f.name)) text += fs.readFileSync(p, 'utf8');
            }
        };
        if (fs.existsSync(logs)) walk(logs);
        return text;
    }

    /** Every notification message seen since the page loaded (see start()). */
    async seenNotifications() {
        if (!this.page) return [];
        const live = (await this.snapshot().catch(() => ({ notifications: [] }))).notifications.map((n) => n.message);
        const seen = await this.page.evaluate(() => window.__e2eNotifications || []).catch(() => []);
        return [...new Set([...seen, ...live])];
    }

    async stop(keep) {
        if (this.ctx) await this.ctx.close().catch(() => {});
        if (this.cs && this.cs.exitCode === null) {
            // code-server runs in its own process group (detached): end that group only
            try { process.kill(-this.cs.pid, 'SIGTERM'); } catch (_) { /* gone */ }
            for (let i = 0; i < 50 && this.cs.exitCode === null && this.cs.signalCode === null; i++) await sleep(100);
            if (this.cs.exitCode === null && this.cs.signalCode === null) {
                try { process.kill(-this.cs.pid, 'SIGKILL'); } catch (_) { /* gone */ }
            }
        }
        try { this.collectLogs(); } catch (_) { /* best effort */ }
        if (!keep) fs.rmSync(this.tmp, { recursive: true, force: true });
    }
}

module.exports = { Workbench, sleep };
