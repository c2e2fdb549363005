#!/usr/bin/env node
// lsp_ready.js — does `<python> -m pypto_lsp serve` answer `initialize` over stdio?
//   node lsp_ready.js PYTHON [TIMEOUT_SECS]
// Prints one JSON line {ok, seconds, serverInfo, commands, reason, stderr} and exits 0 (ready) or 1.
'use strict';
const { spawn } = require('child_process');

const python = process.argv[2];
const timeoutMs = Number(process.argv[3] || 30) * 1000;
const t0 = Date.now();
const child = spawn(python, ['-m', 'pypto_lsp', 'serve'], { stdio: ['pipe', 'pipe', 'pipe'], cwd: require('os').tmpdir() });
let out = Buffer.alloc(0);
let stderr = '';
let done = false;

function finish(res) {
    if (done) return;
    done = true;
    res.seconds = (Date.now() - t0) / 1000;
    res.stderr = stderr.slice(-1500);
    process.stdout.write(JSON.stringify(res) + '\n');
    try {
        send({ jsonrpc: '2.0', id: 2, method: 'shutdown' });
        send({ jsonrpc: '2.0', method: 'exit' });
    } catch (_) { /* already gone */ }
    setTimeout(() => { if (child.exitCode === null) child.kill('SIGKILL'); process.exit(res.ok ? 0 : 1); }, 1500);
}

function send(msg) {
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    child.stdin.write(body);
}

child.on('error', (e) => finish({ ok: false, reason: `cannot run ${python}: ${e.message}` }));
child.on('exit', (code) => finish({ ok: false, reason: `the server exited (code ${code}) before answering initialize` }));
child.stderr.on('data', (d) => { stderr += d.toString(); });
child.stdout.on('data', (d) => {
    out = Buffer.concat([out, d]);
    for (;;) {
        const sep = out.indexOf('\r\n\r\n');
        if (sep < 0) return;
        const m = /Content-Length: *(\d+)/i.exec(out.slice(0, sep).toString());
        if (!m) { finish({ ok: false, reason: 'bad header from the server' }); return; }
        const len = Number(m[1]);
        if (out.length < sep + 4 + len) return;
        const msg = JSON.parse(out.slice(sep + 4, sep + 4 + len).toString('utf8'));
        out = out.slice(sep + 4 + len);
        if (msg.id === 1) {
            if (msg.error) { finish({ ok: false, reason: 'initialize failed: ' + JSON.stringify(msg.error) }); return; }
            const caps = msg.result.capabilities || {};
            finish({
                ok: true,
                serverInfo: msg.result.serverInfo || null,
                commands: (caps.executeCommandProvider && caps.executeCommandProvider.commands) || [],
                codeLens: !!caps.codeLensProvider,
            });
            return;
        }
    }
});
setTimeout(() => finish({ ok: false, reason: `no answer to initialize within ${timeoutMs / 1000}s` }), timeoutMs);
send({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: {
        processId: process.pid, rootUri: null, capabilities: {},
        initializationOptions: { runOn: 'manual', rtol: 0.05, atol: 0.05, timeoutSeconds: 30, golden: { inputs: null, expected: null }, validation: false },
    },
});
