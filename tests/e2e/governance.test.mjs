// Key governance as the SDKs and a CSV reader see it, from the real switchyard-server: keys made
// by `keys create` with rules are refused with the SDKs' typed errors (401 key_expired, 403
// model_not_allowed and ip_not_allowed, 402 key_budget_exceeded), unbilled; the usage and
// ledger exports parse as RFC 4180 with a standard parser and match the JSON API exactly.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Stack, cli } from './lib/harness.mjs';
import { rejects, user } from './lib/util.mjs';

let stack;
const keys = {};

const openai = (apiKey) =>
    new OpenAI({ apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0, timeout: 30_000 });
const anthropic = (apiKey) =>
    new Anthropic({ apiKey, baseURL: stack.url, maxRetries: 0, timeout: 30_000 });

async function rawGet(pathAndQuery) {
    const r = await fetch(`${stack.url}${pathAndQuery}`,
        { headers: { Authorization: `Bearer ${stack.token}` } });
    return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

before(async () => {
    stack = await Stack.start({ scopes: 'credits:read,usage:read,api_keys:read' });
    const make = (name, ...rules) =>
        cli(['keys', 'create', '--name', name, ...rules, '--data-dir', stack.dataDir]);
    keys.expired = make('expired', '--expires', '2020-01-01');
    keys.models = make('models', '--models', 'vendorC-*');
    keys.ip = make('ip', '--allow-ip', '192.0.2.0/24');
    keys.budget = make('budget', '--budget', '0.000000001/day');
});

after(async () => {
    await stack?.stop();
});

describe('refusals by a key\'s rules, as typed SDK errors', () => {
    const chat = (client) => client.chat.completions.create({
        model: 'vendorB-5.4', messages: user('hi'),
    });
    const messages = (client) => client.messages.create({
        model: 'vendorA-sonnet-4-6', max_tokens: 16, messages: user('hi'),
    });

    test('openai: expired, model, address, budget', async () => {
        const before = await stack.settledBalance();
        let e = await rejects(() => chat(openai(keys.expired)));
        assert.ok(e instanceof OpenAI.AuthenticationError, e.constructor.name);
        assert.equal(e.status, 401);
        assert.equal(e.code, 'key_expired');

        e = await rejects(() => chat(openai(keys.models)));
        assert.ok(e instanceof OpenAI.PermissionDeniedError, e.constructor.name);
        assert.equal(e.code, 'model_not_allowed');
        assert.equal(e.param, 'model');

        e = await rejects(() => chat(openai(keys.ip)));
        assert.ok(e instanceof OpenAI.PermissionDeniedError, e.constructor.name);
        assert.equal(e.code, 'ip_not_allowed');

        e = await rejects(() => chat(openai(keys.budget)));
        assert.ok(e instanceof OpenAI.APIError, e.constructor.name);
        assert.equal(e.status, 402);
        assert.equal(e.code, 'key_budget_exceeded');
        assert.match(e.message, /resets at \d{4}-\d\d-\d\dT00:00:00Z/);
        assert.equal(await stack.settledBalance(), before);
    });

    test('anthropic: the same refusals in the messages envelope', async () => {
        const before = await stack.settledBalance();
        let e = await rejects(() => messages(anthropic(keys.expired)));
        assert.ok(e instanceof Anthropic.AuthenticationError, e.constructor.name);
        e = await rejects(() => messages(anthropic(keys.models)));
        assert.ok(e instanceof Anthropic.PermissionDeniedError, e.constructor.name);
        assert.equal(e.error?.type, 'error');
        e = await rejects(() => messages(anthropic(keys.ip)));
        assert.ok(e instanceof Anthropic.PermissionDeniedError, e.constructor.name);
        e = await rejects(() => messages(anthropic(keys.budget)));
        assert.ok(e instanceof Anthropic.APIError, e.constructor.name);
        assert.equal(e.status, 402);
        assert.equal(await stack.settledBalance(), before);
    });
});

describe('CSV exports', () => {
    test('usage and ledger parse as RFC 4180 and match the JSON API', async () => {
        // Something billed to export, with a model name that needs quoting in no CSV column
        // but a request whose usage record exists either way.
        const client = openai(stack.apiKey);
        for (let i = 0; i < 3; i++)
            await client.chat.completions.create({ model: 'vendorB-5.4', messages: user(`n${i}`) });

        const csv = await rawGet('/api/v1/usage?format=csv');
        assert.equal(csv.status, 200);
        assert.match(csv.type, /^text\/csv/);
        assert.ok(csv.text.includes('\r\n'), 'CRLF line ends');
        const rows = parse(csv.text, { columns: true, strict: true });
        const json = await stack.control('/api/v1/usage?limit=1000');
        assert.equal(rows.length, json.data.length);
        for (let i = 0; i < rows.length; i++) {
            const [row, rec] = [rows[i], json.data[i]];
            assert.equal(row.id, rec.id);
            assert.equal(row.cost, rec.cost);
            assert.equal(row.cost_units, rec.cost_units);
            assert.equal(row.model, rec.model);
            assert.equal(row.request_id, rec.request_id);
            assert.equal(Number(row.input_tokens), rec.units.input_tokens);
            assert.equal(Number(row.status), rec.status);
        }
        // The refusals above are there, unbilled.
        assert.ok(rows.some((r) => r.status === '402' && r.cost_units === '0'));

        const ledger = await rawGet('/api/v1/credits/ledger?format=csv');
        assert.equal(ledger.status, 200);
        const entries = parse(ledger.text, { columns: true, strict: true });
        const ledgerJson = await stack.control('/api/v1/credits/ledger?limit=1000');
        assert.equal(entries.length, ledgerJson.data.length);
        assert.deepEqual(entries.map((e) => e.amount), ledgerJson.data.map((e) => e.amount));
        // The grant's note, "e2e", and the charges' reasons survive quoting.
        assert.ok(entries.some((e) => e.kind === 'grant' && e.reason.includes('e2e')));

        const bad = await rawGet('/api/v1/usage?format=xml');
        assert.equal(bad.status, 400);
    });

    test('summary by model adds up to the records', async () => {
        const summary = await stack.control('/api/v1/usage/summary?group_by=model');
        const json = await stack.control('/api/v1/usage?limit=1000');
        for (const group of summary.data) {
            const records = json.data.filter((r) => r.model === group.group);
            assert.equal(group.requests, records.reduce((n, r) => n + r.units.requests, 0));
            assert.equal(BigInt(group.cost_units),
                records.reduce((n, r) => n + BigInt(r.cost_units), 0n));
        }
    });
});
