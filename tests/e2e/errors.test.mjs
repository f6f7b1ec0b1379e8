// Errors as the SDKs see them (their typed error classes) from the real switchyard-server:
// 401 bad key, 402 no credits, 429 local rate limit, 400 bad parameters, 502 upstream down,
// 504 upstream timeout, 429 from the upstream. None of them is billed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import Anthropic0 from '@anthropic-ai/sdk';
import Anthropic1 from 'anthropic1';
import { Stack, UPSTREAM_KEYS, closedPort, masked } from './lib/harness.mjs';
import { rejects, user } from './lib/util.mjs';

const anthropicSdks = [
    { name: 'sdk 0.137', Anthropic: Anthropic0 },
    { name: 'sdk 1.x', Anthropic: Anthropic1 },
];

const openaiClient = (stack, apiKey = stack.apiKey) =>
    new OpenAI({ apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0, timeout: 30_000 });
const anthropicClient = (Anthropic, stack, apiKey = stack.apiKey) =>
    new Anthropic({ apiKey, baseURL: stack.url, maxRetries: 0, timeout: 30_000 });

// The messages protocol's own error envelope: {type: "error", error: {type, message}}.
function assertMessagesEnvelope(e, errorType) {
    assert.equal(e.error?.type, 'error', `messages envelope: ${JSON.stringify(e.error)}`);
    if (errorType)
        assert.equal(e.error.error?.type, errorType, JSON.stringify(e.error));
    assert.equal(typeof e.error.error?.message, 'string');
}

// The OpenAI-style envelope, as the openai SDK exposes it (e.error is body.error).
function assertOpenAIEnvelope(e) {
    assert.equal(typeof e.error?.message, 'string', `error envelope: ${JSON.stringify(e.error)}`);
    assert.equal(typeof e.error?.type, 'string', `error envelope: ${JSON.stringify(e.error)}`);
}

const balanceUnits = (stack) => stack.settledBalance();

async function billedUsage(stack) {
    const u = await stack.control('/api/v1/usage?limit=1000');
    return u.data.filter((r) => BigInt(r.cost_units) > 0n);
}

// --------------------------------------------------------------------------------------------
describe('errors before and around the upstream', () => {
    let stack;
    let openai;
    const firstByteMs = 600;

    before(async () => {
        const down = await closedPort();
        stack = await Stack.start({
            providers: (fake, p) => ({
                ...p,
                anthropic: { ...p.anthropic, timeouts: { connect_ms: 2000,
                    first_byte_ms: firstByteMs, idle_ms: 5000, total_ms: 20000, messages_ms: 20000 } },
                deepseek: { ...p.deepseek, base_url: `http://127.0.0.1:${down}/v1`,
                    timeouts: { connect_ms: 2000 } },
            }),
            rateLimits: { default: { chat: 600 }, tiny: { default: 2, chat: 2 } },
            keys: [{ name: 'e2e' }, { name: 'tiny', tier: 'tiny' }],
        });
        openai = openaiClient(stack);
    });

    after(async () => {
        await stack?.stop();
    });

    test('401: a wrong or missing key, through every SDK', async () => {
        const bad = 'sk-e2e-this-key-does-not-exist-0000000000000';
        const mark = stack.fake.mark();
        let e = await rejects(() => openaiClient(stack, bad).chat.completions.create({
            model: 'vendorB-6-luna', messages: user('x'),
        }));
        assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
        assert.equal(e.status, 401);
        assertOpenAIEnvelope(e);

        e = await rejects(() => openaiClient(stack, bad).responses.create({
            model: 'vendorB-6-luna', input: 'x',
        }));
        assert.ok(e instanceof OpenAI.AuthenticationError, String(e));

        for (const { name, Anthropic } of anthropicSdks) {
            e = await rejects(() => anthropicClient(Anthropic, stack, bad).messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 16, messages: user('x'),
            }));
            assert.ok(e instanceof Anthropic.AuthenticationError, `${name}: ${e}`);
            assert.equal(e.status, 401);
            assertMessagesEnvelope(e, 'authentication_error');
        }

        // No credential at all, and a control token where an API key is needed.
        for (const auth of [null, `Bearer ${stack.token}`]) {
            const r = await fetch(`${stack.url}/v1/chat/completions`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json',
                    ...(auth ? { Authorization: auth } : {}) },
                body: JSON.stringify({ model: 'vendorB-6-luna', messages: user('x') }),
            });
            assert.equal(r.status, 401, `auth ${auth}`);
        }
        assert.equal(stack.fake.mark(), mark, 'nothing reached the upstream');
    });

    test('400: parameters the contract refuses, never sent upstream', async () => {
        const mark = stack.fake.mark();
        const cases = [
            ['temperature 3 on chat', 'temperature',
                () => openai.chat.completions.create({
                    model: 'vendorB-6-luna', messages: user('x'), temperature: 3 })],
            ['five stop sequences', 'stop',
                () => openai.chat.completions.create({
                    model: 'vendorB-6-luna', messages: user('x'), stop: ['a', 'b', 'c', 'd', 'e'] })],
            ['unknown model on chat', 'model',
                () => openai.chat.completions.create({
                    model: 'no-such-model-e2e', messages: user('x') })],
            ['unknown model on responses', 'model',
                () => openai.responses.create({ model: 'no-such-model-e2e', input: 'x' })],
            ['a vendorA model on responses', 'model',
                () => openai.responses.create({ model: 'vendorA-sonnet-4-6', input: 'x' })],
        ];
        for (const [what, param, call] of cases) {
            const e = await rejects(call, `${what}: expected a 400`);
            assert.ok(e instanceof OpenAI.BadRequestError, `${what}: ${e}`);
            assert.equal(e.status, 400, what);
            assertOpenAIEnvelope(e);
            assert.ok(e.message.includes(param) || e.param === param,
                `${what}: the error names ${param}: ${e.message}`);
        }
        for (const { name, Anthropic } of anthropicSdks) {
            const client = anthropicClient(Anthropic, stack);
            const mcases = [
                ['temperature 1.5 on messages', () => client.messages.create({
                    model: 'vendorA-sonnet-4-6', max_tokens: 16, temperature: 1.5,
                    messages: user('x') })],
                ['missing max_tokens on messages', () => client.messages.create({
                    model: 'vendorA-sonnet-4-6', messages: user('x') })],
                ['unknown model on messages', () => client.messages.create({
                    model: 'no-such-model-e2e', max_tokens: 16, messages: user('x') })],
                ['a vendorB model on messages', () => client.messages.create({
                    model: 'vendorB-6-luna', max_tokens: 16, messages: user('x') })],
            ];
            for (const [what, call] of mcases) {
                const e = await rejects(call, `${name} ${what}: expected a 400`);
                assert.ok(e instanceof Anthropic.BadRequestError, `${name} ${what}: ${e}`);
                assertMessagesEnvelope(e, 'invalid_request_error');
            }
        }
        // The messages endpoint needs anthropic-version.
        const r = await fetch(`${stack.url}/v1/messages`, {
            method: 'POST',
            headers: { 'x-api-key': stack.apiKey, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'vendorA-sonnet-4-6', max_tokens: 16, messages: user('x') }),
        });
        assert.equal(r.status, 400, 'no anthropic-version');
        assert.equal((await r.json()).type, 'error');

        assert.equal(stack.fake.mark(), mark, 'no refused request reached the upstream');
    });

    test('429: the key\'s tier allows 2 chat requests a minute', async () => {
        const tiny = openaiClient(stack, stack.keys.tiny);
        for (let i = 0; i < 2; i++) {
            const r = await tiny.chat.completions.create({
                model: 'vendorB-6-luna', messages: user('within the limit') });
            assert.equal(r.choices[0].message.content, 'Echo: within the limit');
        }
        const mark = stack.fake.mark();
        const e = await rejects(() => tiny.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('x') }));
        assert.ok(e instanceof OpenAI.RateLimitError, String(e));
        assert.equal(e.status, 429);
        assertOpenAIEnvelope(e);
        assert.ok(Number(e.headers.get('retry-after')) > 0, 'Retry-After');
        assert.equal(stack.fake.mark(), mark, 'not sent upstream');
        // Another key is not affected.
        const r = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('another key') });
        assert.equal(r.choices[0].message.content, 'Echo: another key');
    });

    test('429 on messages: the tier\'s default applies to the messages bucket', async () => {
        const [first, second] = anthropicSdks.map(({ Anthropic }) =>
            anthropicClient(Anthropic, stack, stack.keys.tiny));
        for (let i = 0; i < 2; i++) {
            const m = await first.messages.create({ model: 'vendorA-haiku-4-5', max_tokens: 16,
                messages: user('within the limit') });
            assert.equal(m.content[0].text, 'Echo: within the limit');
        }
        const mark = stack.fake.mark();
        for (const [{ name, Anthropic }, client] of [[anthropicSdks[0], first], [anthropicSdks[1], second]]) {
            const e = await rejects(() => client.messages.create({ model: 'vendorA-haiku-4-5',
                max_tokens: 16, messages: user('over the limit') }));
            assert.ok(e instanceof Anthropic.RateLimitError, `${name}: ${e}`);
            assertMessagesEnvelope(e, 'rate_limit_error');
            assert.ok(Number(e.headers.get('retry-after')) > 0, 'Retry-After');
        }
        assert.equal(stack.fake.mark(), mark, 'not sent upstream');
    });

    test('502: the provider\'s address refuses connections', async () => {
        const before = await balanceUnits(stack);
        let e = await rejects(() => openai.chat.completions.create({
            model: 'vendorC-v4-flash', messages: user('x') }));
        assert.ok(e instanceof OpenAI.InternalServerError, String(e));
        assert.equal(e.status, 502);
        assertOpenAIEnvelope(e);
        e = await rejects(() => openai.chat.completions.create({
            model: 'vendorC-v4-flash', messages: user('x'), stream: true }));
        assert.equal(e.status, 502, String(e));
        for (const { name, Anthropic } of anthropicSdks) {
            const client = anthropicClient(Anthropic, stack);
            e = await rejects(() => client.messages.create({
                model: 'vendorC-v4-pro', max_tokens: 16, messages: user('x') }));
            assert.ok(e instanceof Anthropic.InternalServerError, `${name}: ${e}`);
            assert.equal(e.status, 502);
            assertMessagesEnvelope(e);
            e = await rejects(() => client.messages.stream({
                model: 'vendorC-v4-pro', max_tokens: 16, messages: user('x') }).finalMessage());
            assert.equal(e.status, 502, `${name} stream: ${e}`);
        }
        assert.equal(await balanceUnits(stack), before, 'not billed');
    });

    test('504: the upstream\'s first byte comes after first_byte_ms', async () => {
        const before = await balanceUnits(stack);
        const upstreamDelay = firstByteMs * 10;
        const slow = `slow [fake delay-ms=${upstreamDelay}]`;
        const timed = async (fn) => {
            const t0 = Date.now();
            const e = await rejects(fn);
            return { e, ms: Date.now() - t0 };
        };
        // Well before the upstream would have answered.
        const inTime = (ms) => assert.ok(ms >= firstByteMs - 50 && ms < upstreamDelay / 2,
            `answered after ${ms} ms with first_byte_ms ${firstByteMs}`);

        let { e, ms } = await timed(() => openai.chat.completions.create({
            model: 'vendorA-haiku-4-5', messages: user(slow) }));
        assert.ok(e instanceof OpenAI.InternalServerError, String(e));
        assert.equal(e.status, 504);
        assertOpenAIEnvelope(e);
        inTime(ms);

        for (const { name, Anthropic } of anthropicSdks) {
            const client = anthropicClient(Anthropic, stack);
            ({ e, ms } = await timed(() => client.messages.create({
                model: 'vendorA-haiku-4-5', max_tokens: 16, messages: user(slow) })));
            assert.ok(e instanceof Anthropic.InternalServerError, `${name}: ${e}`);
            assert.equal(e.status, 504);
            assertMessagesEnvelope(e);
            inTime(ms);
            ({ e, ms } = await timed(() => client.messages.stream({
                model: 'vendorA-haiku-4-5', max_tokens: 16, messages: user(slow) }).finalMessage()));
            assert.equal(e.status, 504, `${name} stream: ${e}`);
            inTime(ms);
        }
        assert.equal(await balanceUnits(stack), before, 'not billed');
    });

    test('no failed request above was billed', async () => {
        const usage = (await stack.control('/api/v1/usage?limit=1000')).data;
        for (const r of usage) {
            if (r.status >= 400)
                assert.equal(r.cost_units, '0', `failed request billed: ${JSON.stringify(r)}`);
        }
        const billed = await billedUsage(stack);
        assert.ok(billed.length >= 3, 'the successful requests were billed');
    });
});

// --------------------------------------------------------------------------------------------
describe('402: an account without credits', () => {
    let stack;
    before(async () => {
        stack = await Stack.start({ credits: null });
    });
    after(async () => {
        await stack?.stop();
    });

    test('chat, responses and messages refuse with 402 before the upstream', async () => {
        const mark = stack.fake.mark();
        const openai = openaiClient(stack);
        let e = await rejects(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('x') }));
        assert.ok(e instanceof OpenAI.APIError, String(e));
        assert.equal(e.status, 402);
        assertOpenAIEnvelope(e);
        e = await rejects(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('x'), stream: true }));
        assert.equal(e.status, 402);
        e = await rejects(() => openai.responses.create({ model: 'vendorB-6-luna', input: 'x' }));
        assert.equal(e.status, 402);
        for (const { name, Anthropic } of anthropicSdks) {
            e = await rejects(() => anthropicClient(Anthropic, stack).messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 16, messages: user('x') }));
            assert.ok(e instanceof Anthropic.APIError, `${name}: ${e}`);
            assert.equal(e.status, 402, name);
            assertMessagesEnvelope(e);
        }
        assert.equal(stack.fake.mark(), mark, 'nothing reached the upstream');
        const bal = await stack.control('/api/v1/credits/balance');
        assert.equal(bal.balance_units, '0');
    });
});

// --------------------------------------------------------------------------------------------
describe('429 from the upstream', () => {
    let stack;
    before(async () => {
        stack = await Stack.start();
    });
    after(async () => {
        await stack?.stop();
    });

    test('every upstream key answers 429: the client gets 429, not billed', async () => {
        const openai = openaiClient(stack);
        const mark = stack.fake.mark();
        let e = await rejects(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('busy [fake fault=429]') }));
        assert.ok(e instanceof OpenAI.RateLimitError, String(e));
        assert.equal(e.status, 429);
        assertOpenAIEnvelope(e);
        assert.ok(Number(e.headers.get('retry-after')) > 0, 'Retry-After');
        const tried = stack.fake.requestsSince(mark).map((r) => r.headers.authorization);
        assert.deepEqual([...new Set(tried)].sort(),
            UPSTREAM_KEYS.openai.map((k) => `Bearer ${masked(k)}`).sort(),
            'both upstream keys were tried');

        for (const { name, Anthropic } of anthropicSdks) {
            e = await rejects(() => anthropicClient(Anthropic, stack).messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 16, messages: user('busy [fake fault=429]') }));
            assert.ok(e instanceof Anthropic.RateLimitError, `${name}: ${e}`);
            assertMessagesEnvelope(e, 'rate_limit_error');
        }
        const bal = await stack.control('/api/v1/credits/balance');
        assert.equal(bal.balance_units, '100000000000', 'not billed');

        // The keys rest after a 429, but the provider is not shut: the next request is served.
        const r = await openai.chat.completions.create({ model: 'vendorB-6-luna',
            messages: user('calm again') });
        assert.equal(r.choices[0].message.content, 'Echo: calm again');
    });
});
