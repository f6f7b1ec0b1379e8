// Starts the real processes the end-to-end tests talk to: tests/fake_upstream (the upstream
// providers) and switchyard-server (with a fresh SQLite data dir, an API key, a control token
// and credits made by the server's own admin commands), and stops them again.
//
// The binaries come from the environment (ctest sets both, see CMakeLists.txt):
//   SWITCHYARD_SERVER  path of switchyard-server
//   FAKE_UPSTREAM      path of fake_upstream
// Server and fake output goes to files under E2E_LOG_DIR (default: a temp dir), never to the
// console; a failing start throws with the tail of the log.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

// The SDKs read OPENAI_* / ANTHROPIC_* variables (base URL, auth token, org) when a client is
// made; the tests pass everything explicitly, so a developer's own settings must not leak in.
for (const name of Object.keys(process.env)) {
    if (/^(OPENAI|ANTHROPIC)_/.test(name)) delete process.env[name];
}

export const SERVER = process.env.SWITCHYARD_SERVER;
export const FAKE = process.env.FAKE_UPSTREAM;

function requireBinaries() {
    for (const [name, value] of [['SWITCHYARD_SERVER', SERVER], ['FAKE_UPSTREAM', FAKE]]) {
        if (!value || !fs.existsSync(value))
            throw new Error(`${name} must name the built binary (got ${value ?? 'nothing'}); ` +
                'run through ctest, or set it by hand');
    }
}

// Every process we start; killed when this test file's process exits, whatever the reason.
const children = new Set();
process.on('exit', () => {
    for (const c of children) {
        try { c.kill('SIGKILL'); } catch { /* gone */ }
    }
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => process.exit(128 + os.constants.signals[sig]));
}

let logRoot = null;
function logDir() {
    if (!logRoot) {
        const base = process.env.E2E_LOG_DIR || os.tmpdir();
        fs.mkdirSync(base, { recursive: true });
        logRoot = fs.mkdtempSync(path.join(base,
            `${path.basename(process.argv[1] ?? 'e2e', '.mjs')}-`));
    }
    return logRoot;
}

let logSeq = 0;
function logFile(name) {
    logSeq += 1;
    return path.join(logDir(), `${String(logSeq).padStart(2, '0')}-${name}.log`);
}

function tail(file, lines = 40) {
    try {
        return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
        return '(no log)';
    }
}

// The environment for our children: no inherited data-dir/database defaults.
function childEnv() {
    const env = { ...process.env, QT_QPA_PLATFORM: 'offscreen' };
    delete env.SWITCHYARD_DATA_DIR;
    delete env.SWITCHYARD_DATABASE;
    return env;
}

function track(proc) {
    children.add(proc);
    proc.once('exit', () => children.delete(proc));
    return proc;
}

function waitExit(proc, ms) {
    if (proc.exitCode !== null || proc.signalCode !== null)
        return Promise.resolve(true);
    return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        proc.once('exit', () => { clearTimeout(timer); resolve(true); });
    });
}

// Waits for a line matching `re` on `stream` (copying every line to `file`); rejects when the
// process exits first or after `ms`.
function waitForLine(proc, stream, re, file, ms, what) {
    const out = fs.createWriteStream(file, { flags: 'a' });
    const rl = readline.createInterface({ input: stream });
    return new Promise((resolve, reject) => {
        let done = false;
        const finish = (err, value) => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            proc.off('exit', onExit);
            if (err) reject(err); else resolve(value);
        };
        const timer = setTimeout(() => finish(new Error(
            `${what} did not report its address within ${ms} ms; log ${file}:\n${tail(file)}`)), ms);
        const onExit = (code, sig) => setTimeout(() => finish(new Error(
            `${what} exited (${code ?? sig}) before listening; log ${file}:\n${tail(file)}`)), 50);
        proc.once('exit', onExit);
        rl.on('line', (line) => {
            out.write(line + '\n');
            const m = re.exec(line);
            if (m) finish(null, m[1]);
        });
    });
}

// ------------------------------------------------------------------ fake upstream

export class FakeUpstream {
    static async start(args = []) {
        requireBinaries();
        const log = logFile('fake-upstream');
        const requestLog = logFile('fake-requests');
        fs.writeFileSync(requestLog, '');
        const errFd = fs.openSync(log, 'a');
        // stdin stays a pipe: the fake exits when it closes, so it cannot outlive us.
        const proc = track(spawn(FAKE, ['--listen', '127.0.0.1:0', '--log', requestLog, ...args],
            { stdio: ['pipe', 'pipe', errFd], env: childEnv() }));
        fs.closeSync(errFd);
        const url = await waitForLine(proc, proc.stdout,
            /^listening on (http:\/\/127\.0\.0\.1:\d+)/, log, 10_000, 'fake_upstream');
        return new FakeUpstream(proc, url, requestLog, log);
    }

    constructor(proc, url, requestLog, log) {
        this.proc = proc;
        this.url = url;
        this.requestLog = requestLog;
        this.log = log;
    }

    // Every request the fake received so far: {seq, method, path, headers, body (parsed JSON
    // when it is JSON, else the raw string)}.
    requests() {
        const text = fs.readFileSync(this.requestLog, 'utf8');
        return text.split('\n').filter(Boolean).map((line) => {
            const r = JSON.parse(line);
            try { r.json = JSON.parse(r.body); } catch { r.json = null; }
            return r;
        });
    }

    // The generation requests (POSTs: chat completions, responses, messages) in order; GETs,
    // like the gateway's catalog refreshes, come at any time and are left out.
    generations() {
        return this.requests().filter((r) => r.method === 'POST');
    }

    // A mark to pass to requestsSince(): the number of generation requests so far.
    mark() {
        return this.generations().length;
    }

    // The generation requests made after `mark`.
    requestsSince(mark) {
        return this.generations().slice(mark);
    }

    async stats() {
        const r = await fetch(`${this.url}/fake/stats`);
        return r.json();
    }

    async stop() {
        try { this.proc.stdin.end(); } catch { /* gone */ }
        if (!(await waitExit(this.proc, 3000))) {
            this.proc.kill('SIGKILL');
            await waitExit(this.proc, 3000);
        }
    }
}

// ------------------------------------------------------------------ switchyard-server

// Runs an admin command against a data dir; returns its stdout (the secret), trimmed.
export function cli(args) {
    requireBinaries();
    const r = spawnSync(SERVER, args, { env: childEnv(), encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0)
        throw new Error(`switchyard-server ${args.join(' ')} exited ${r.status ?? r.signal}: ` +
            `${r.stderr}`);
    return r.stdout.trim();
}

// Upstream keys per provider. The fake's request log masks keys to "***" + the last 4
// characters (keys of 8 characters or less to "***"), so these are long and end differently.
export const UPSTREAM_KEYS = {
    openai: ['up-key-openai-0001', 'up-key-openai-0002'],
    anthropic: ['up-key-anthropic-000a'],
    deepseek: ['up-key-deepseek-000d'],
    openrouter: ['up-key-openrouter-000o'],
};
// How the fake's log shows a key: masked(UPSTREAM_KEYS.openai[0]) === '***0001'.
export const masked = (key) => `***${key.slice(-4)}`;

// The default providers, all pointing at the fake (base URLs include the version path).
export function defaultProviders(fakeUrl) {
    return {
        openai: { type: 'openai', base_url: `${fakeUrl}/v1`, keys: UPSTREAM_KEYS.openai },
        anthropic: { type: 'anthropic', base_url: `${fakeUrl}/v1`, keys: UPSTREAM_KEYS.anthropic },
        deepseek: { type: 'anthropic', base_url: `${fakeUrl}/v1`, keys: UPSTREAM_KEYS.deepseek },
        openrouter: { type: 'catalog', base_url: `${fakeUrl}/api/v1`, keys: UPSTREAM_KEYS.openrouter },
    };
}

// A loopback port nothing listens on (bound, then closed).
export async function closedPort() {
    const srv = net.createServer();
    await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const { port } = srv.address();
    await new Promise((resolve) => srv.close(resolve));
    return port;
}

export class Stack {
    // options:
    //   providers(fakeUrl, defaults) -> providers object (default: defaultProviders)
    //   gateway: extra fields of the "gateway" section
    //   rateLimits: the "rate_limits" section (default {default: {chat: 600}})
    //   credits: credits granted ("100"; null grants none)
    //   keys: [{name, tier}] API keys to create (default [{name: 'e2e'}]); the first is apiKey
    //   scopes: control token scopes (default credits:read,usage:read)
    //   fakeArgs: extra fake_upstream flags
    //   sections: more config file sections ({audio: {...}}), or fakeUrl -> sections
    static async start(options = {}) {
        const stack = new Stack();
        try {
            await stack.#start(options);
        } catch (e) {
            await stack.stop();
            throw e;
        }
        return stack;
    }

    async #start({
        providers = (fakeUrl, defaults) => defaults,
        gateway = {},
        rateLimits = { default: { chat: 600 } },
        credits = '100',
        keys = [{ name: 'e2e' }],
        scopes = 'credits:read,usage:read',
        fakeArgs = [],
        sections = {},
    }) {
        requireBinaries();
        this.fake = await FakeUpstream.start(fakeArgs);
        this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-e2e-data-'));
        this.config = {
            gateway: {
                providers: providers(this.fake.url, defaultProviders(this.fake.url)),
                keepalive_ms: 15000,
                ...gateway,
            },
            rate_limits: rateLimits,
            ...(typeof sections === 'function' ? sections(this.fake.url) : sections),
        };
        this.configFile = path.join(this.dataDir, 'config.json');
        fs.writeFileSync(this.configFile, JSON.stringify(this.config, null, 2));

        const dd = ['--data-dir', this.dataDir];
        this.keys = {};
        for (const k of keys) {
            const args = ['keys', 'create', '--name', k.name, ...dd];
            if (k.tier) args.push('--tier', k.tier);
            this.keys[k.name] = cli(args);
            if (!this.keys[k.name].startsWith('sk-'))
                throw new Error(`keys create printed ${JSON.stringify(this.keys[k.name])}`);
        }
        this.apiKey = this.keys[keys[0].name];
        this.token = cli(['tokens', 'create', '--name', 'e2e', '--scopes', scopes, ...dd]);
        if (!this.token.startsWith('lpc_'))
            throw new Error(`tokens create printed ${JSON.stringify(this.token)}`);
        if (credits !== null)
            cli(['credits', 'grant', '--amount', credits, '--note', 'e2e', ...dd]);

        this.log = logFile('switchyard-server');
        const outFd = fs.openSync(this.log, 'a');
        this.proc = track(spawn(SERVER,
            ['serve', '--listen', '127.0.0.1:0', '--config', this.configFile, ...dd],
            { stdio: ['ignore', outFd, 'pipe'], env: childEnv() }));
        fs.closeSync(outFd);
        this.url = await waitForLine(this.proc, this.proc.stderr,
            /Switchyard is listening on (http:\/\/127\.0\.0\.1:\d+)/, this.log, 15_000,
            'switchyard-server');
    }

    // GET a control endpoint with the control token; returns the parsed body (throws on non-2xx).
    async control(pathAndQuery) {
        const r = await fetch(`${this.url}${pathAndQuery}`,
            { headers: { Authorization: `Bearer ${this.token}` } });
        const text = await r.text();
        if (!r.ok)
            throw new Error(`GET ${pathAndQuery} -> ${r.status}: ${text}`);
        return JSON.parse(text);
    }

    // The balance in units (BigInt) once it stops moving: a stream that broke is settled
    // after its client may already have seen the error, so wait for two equal reads.
    async settledBalance() {
        let last = null;
        for (let i = 0; i < 50; i++) {
            const now = BigInt((await this.control('/api/v1/credits/balance')).balance_units);
            if (now === last) return now;
            last = now;
            await new Promise((resolve) => setTimeout(resolve, 150));
        }
        throw new Error('the balance kept changing');
    }

    async models() {
        const r = await fetch(`${this.url}/v1/models`);
        if (!r.ok)
            throw new Error(`GET /v1/models -> ${r.status}: ${await r.text()}`);
        return (await r.json()).data;
    }

    serverLogTail(lines = 40) {
        return tail(this.log, lines);
    }

    async stop() {
        if (this.proc) {
            this.proc.kill('SIGTERM');
            if (!(await waitExit(this.proc, 10_000))) {
                this.proc.kill('SIGKILL');
                await waitExit(this.proc, 3000);
            }
            this.proc = null;
        }
        if (this.fake) {
            await this.fake.stop();
            this.fake = null;
        }
        if (this.dataDir && !process.env.E2E_KEEP_DATA) {
            fs.rmSync(this.dataDir, { recursive: true, force: true });
            this.dataDir = null;
        }
    }
}
