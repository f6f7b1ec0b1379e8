// Billing seen from outside: after real SDK requests through switchyard-server, the usage
// records and the credit balance (control API, lpc_ token) must equal the tokens the SDKs saw
// times the prices /v1/models publishes, rounded once per request as models/Money.h says:
// cost = ceil((input*in + output*out + cacheRead*cr + cacheWrite*cw) / 1e6) units of 1e-9 credit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import Anthropic1 from 'anthropic1';
import { Stack } from './lib/harness.mjs';
import {
    UNITS_PER_CREDIT, expectedCost, fakePromptTokens, perTokenToUnitsPerMillion, priceOf,
    rejects, sleep, user,
} from './lib/util.mjs';

let stack;
let openai;
let anthropic;
let anthropic1;
const granted = 100n * UNITS_PER_CREDIT;

// model -> the tokens the client saw (billing convention: input excludes cached tokens).
const expected = new Map();
const gatewayModel = 'gateway/openrouter/fakeai/echo-large';

// A model added by the config file, priced so that a request costs a fraction of a unit more
// than a whole number: the one rounding per request shows (per-part rounding would differ).
const oddModel = {
    id: 'e2e-odd-price', owned_by: 'e2e', provider: 'openai', upstream_model: 'e2e-odd-upstream',
    endpoints: ['chat.completions', 'responses'],
    pricing: { input: '0.123456789', output: '1.000000001', cache_read: '0.000000007' },
};

before(async () => {
    stack = await Stack.start({ gateway: { models: [oddModel] } });
    openai = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 });
    anthropic1 = new Anthropic1({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 });
});

after(async () => {
    await stack?.stop();
});

const fromChat = (u) => ({
    input: u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0),
    cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
    output: u.completion_tokens,
    cacheWrite: 0,
});
const fromResponses = (u) => ({
    input: u.input_tokens - (u.input_tokens_details?.cached_tokens ?? 0),
    cacheRead: u.input_tokens_details?.cached_tokens ?? 0,
    output: u.output_tokens,
    cacheWrite: 0,
});
const fromMessages = (u) => ({
    input: u.input_tokens,
    cacheRead: u.cache_read_input_tokens ?? 0,
    cacheWrite: u.cache_creation_input_tokens ?? 0,
    output: u.output_tokens,
});

async function prices() {
    const models = await stack.models();
    const byId = new Map(models.map((m) => [m.id, m]));
    const result = new Map();
    for (const id of expected.keys()) {
        assert.ok(byId.has(id), `${id} is listed in /v1/models`);
        result.set(id, priceOf(byId.get(id)));
        if (id.startsWith('gateway/openrouter/')) {
            // Priced pass-through from the live catalog (credits per token there).
            const catalog = await (await fetch(`${stack.fake.url}/api/v1/models`)).json();
            const m = catalog.data.find((x) => `gateway/openrouter/${x.id}` === id);
            assert.ok(m, `${id} in the fake's catalog`);
            assert.deepEqual(result.get(id), {
                input: perTokenToUnitsPerMillion(m.pricing.prompt),
                output: perTokenToUnitsPerMillion(m.pricing.completion),
                cacheRead: perTokenToUnitsPerMillion(m.pricing.input_cache_read ?? '0'),
                cacheWrite: perTokenToUnitsPerMillion(m.pricing.input_cache_write ?? '0'),
            }, `${id}: /v1/models shows the catalog's per-token prices per 1M tokens`);
        }
    }
    return result;
}

async function usageRecords() {
    const page = await stack.control('/api/v1/usage?limit=1000');
    assert.equal(page.has_more, false);
    return page.data;
}

describe('billing', () => {
    test('requests on the three endpoints, streaming and not', async () => {
        // chat, non-streaming, with cached prompt tokens
        let r = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('hello world [fake cache-read=4]') });
        assert.equal(r.usage.prompt_tokens_details.cached_tokens, 4);
        expected.set('vendorB-6-luna', fromChat(r.usage));

        // chat, streaming with include_usage
        let usage = null;
        for await (const c of await openai.chat.completions.create({
            model: 'vendorB-5.4', messages: user('one two three'), stream: true,
            stream_options: { include_usage: true } }))
            usage = c.usage ?? usage;
        expected.set('vendorB-5.4', fromChat(usage));

        // chat, streaming WITHOUT include_usage: billed all the same, from the fake's counts
        let text = '';
        for await (const c of await openai.chat.completions.create({
            model: 'vendorB-6-sol', messages: user('hello world [fake chunks=5]'), stream: true }))
            text += c.choices[0]?.delta?.content ?? '';
        assert.equal(text, 'Echo: hello world [fake chunks=5]');
        expected.set('vendorB-6-sol', { input: fakePromptTokens('hello world [fake chunks=5]'),
            output: 5, cacheRead: 0, cacheWrite: 0 });

        // chat on a vendorA model (translated), streaming without include_usage
        text = '';
        for await (const c of await openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6', messages: user('translated please'), stream: true }))
            text += c.choices[0]?.delta?.content ?? '';
        assert.equal(text, 'Echo: translated please');
        expected.set('vendorA-sonnet-4-6', { input: fakePromptTokens('translated please'),
            output: 8, cacheRead: 0, cacheWrite: 0 });

        // responses, non-streaming and streaming (with cached tokens)
        const resp = await openai.responses.create({ model: 'vendorB-5-nano', input: 'hi there' });
        expected.set('vendorB-5-nano', fromResponses(resp.usage));
        const final = await openai.responses.stream({
            model: 'vendorB-5.5', input: 'streamed response [fake cache-read=3 chunks=12]',
        }).finalResponse();
        assert.equal(final.usage.input_tokens_details.cached_tokens, 3);
        assert.equal(final.usage.output_tokens, 12);
        expected.set('vendorB-5.5', fromResponses(final.usage));

        // messages, non-streaming with cache read and write (0.137)
        const m = await anthropic.messages.create({
            model: 'vendorA-haiku-4-5', max_tokens: 100,
            messages: user('cached [fake cache-read=5 cache-write=6]') });
        assert.equal(m.usage.cache_read_input_tokens, 5);
        assert.equal(m.usage.cache_creation_input_tokens, 6);
        expected.set('vendorA-haiku-4-5', fromMessages(m.usage));

        // messages, streaming: input in message_start, output in message_delta (1.x)
        const fm = await anthropic1.messages.stream({
            model: 'vendorC-v4-pro', max_tokens: 100, system: 'Short answers.',
            messages: user('stream [fake cache-read=2 cache-write=1 chunks=9]') }).finalMessage();
        assert.equal(fm.usage.output_tokens, 9);
        expected.set('vendorC-v4-pro', fromMessages(fm.usage));

        // messages, streaming, newer cumulative message_delta usage (0.137)
        const fm2 = await anthropic.messages.stream({
            model: 'vendorA-opus-4-8', max_tokens: 100,
            messages: user('full [fake delta-usage=full cache-read=7 cache-write=2]') }).finalMessage();
        expected.set('vendorA-opus-4-8', fromMessages(fm2.usage));

        // messages, truncated by max_tokens
        const mt = await anthropic.messages.create({
            model: 'vendorC-v4-flash', max_tokens: 3, messages: user('hello world') });
        assert.equal(mt.usage.output_tokens, 3);
        expected.set('vendorC-v4-flash', fromMessages(mt.usage));

        // gateway/* model, priced from the live catalog, with cached tokens
        r = await openai.chat.completions.create({
            model: gatewayModel, messages: user('gateway [fake cache-read=10]') });
        assert.equal(r.usage.prompt_tokens_details.cached_tokens, 10);
        expected.set(gatewayModel, fromChat(r.usage));

        // chat on a vendorA model with prompt caching: the client sees cached tokens only, but
        // cache writes are billed at their own price
        r = await openai.chat.completions.create({
            model: 'vendorA-fable-5', messages: user('hello [fake cache-read=5 cache-write=7]') });
        const u = fakePromptTokens('hello [fake cache-read=5 cache-write=7]');
        assert.equal(r.usage.prompt_tokens, u + 5 + 7);
        assert.equal(r.usage.prompt_tokens_details.cached_tokens, 5);
        expected.set('vendorA-fable-5', { input: u, output: 8, cacheRead: 5, cacheWrite: 7 });

        // a free gateway/* model: a usage record that costs nothing
        r = await openai.chat.completions.create({
            model: 'gateway/openrouter/meta-llama/llama-fake:free', messages: user('free lunch') });
        assert.equal(r.choices[0].message.content, 'Echo: free lunch');

        // a model from the config file, with prices that need the final rounding
        const { result: odd, upstream: oddUp } = await (async () => {
            const mark = stack.fake.mark();
            const result = await openai.chat.completions.create({
                model: oddModel.id, messages: user('odd prices [fake cache-read=4]') });
            return { result, upstream: stack.fake.requestsSince(mark) };
        })();
        assert.equal(odd.model, oddModel.id);
        assert.equal(oddUp[0].json.model, oddModel.upstream_model);
        expected.set(oddModel.id, fromChat(odd.usage));

        // A refused request costs nothing.
        const e = await rejects(() => openai.chat.completions.create({
            model: 'vendorA-opus-4-7', messages: user('x'), temperature: 3 }));
        assert.equal(e.status, 400);
    });

    test('each usage record has the tokens the client saw and cost = tokens x price', async () => {
        const price = await prices();
        const records = await usageRecords();
        for (const [model, tokens] of expected) {
            const mine = records.filter((r) => r.model === model);
            assert.equal(mine.length, 1,
                `one usage record for ${model}: ${JSON.stringify(records.map((r) => r.model))}`);
            const rec = mine[0];
            assert.equal(rec.status, 200, model);
            assert.equal(rec.estimated, false, `${model}: usage came from the upstream`);
            assert.deepEqual({
                input: rec.units.input_tokens, output: rec.units.output_tokens,
                cacheRead: rec.units.cache_read_tokens, cacheWrite: rec.units.cache_write_tokens,
            }, tokens, `${model}: billed tokens`);
            const cost = expectedCost(tokens, price.get(model));
            if (model === oddModel.id) {
                const p = price.get(model);
                const exact = BigInt(tokens.input) * p.input + BigInt(tokens.output) * p.output +
                    BigInt(tokens.cacheRead) * p.cacheRead;
                assert.notEqual(exact % 1_000_000n, 0n, 'this request costs a fractional unit');
                assert.equal(p.input, 123_456_789n, 'config prices are exact in /v1/models');
            }
            assert.ok(cost > 0n, `${model} costs something`);
            assert.equal(BigInt(rec.cost_units), cost, `${model}: cost`);
        }
        assert.ok(!records.some((r) => r.model === 'vendorA-opus-4-7' && BigInt(r.cost_units) > 0n),
            'the refused request was not billed');
        const free = records.filter((r) => r.model === 'gateway/openrouter/meta-llama/llama-fake:free');
        assert.equal(free.length, 1, 'the free model\'s request is recorded');
        assert.equal(free[0].cost_units, '0');
        assert.ok(free[0].units.output_tokens > 0);
    });

    test('concurrent requests are each billed exactly once', async () => {
        const n = 16;
        const model = 'vendorB-5.4-mini';
        const calls = [];
        for (let i = 0; i < n; i++) {
            const content = `parallel number ${i} [fake chunks=${4 + i} interval-ms=20]`;
            calls.push(i % 2
                ? openai.chat.completions.create({ model, messages: user(content) })
                    .then((r) => r.usage)
                : openai.chat.completions.create({ model, messages: user(content), stream: true,
                    stream_options: { include_usage: true } }).then(async (s) => {
                    let usage = null;
                    for await (const c of s) usage = c.usage ?? usage;
                    return usage;
                }));
        }
        const usages = await Promise.all(calls);
        const price = priceOf((await stack.models()).find((m) => m.id === model));
        const want = usages.map((u) => expectedCost(fromChat(u), price)).sort();
        const records = (await usageRecords()).filter((r) => r.model === model);
        assert.equal(records.length, n, 'one usage record per request');
        assert.deepEqual(records.map((r) => BigInt(r.cost_units)).sort(), want);
        assert.equal(new Set(records.map((r) => r.request_id)).size, n);
    });

    test('a stream the client abandons is billed too', async () => {
        const controller = new AbortController();
        const stream = await openai.chat.completions.create({
            model: 'vendorB-6-astra', stream: true,
            messages: user('long answer [fake chunks=40 interval-ms=50]'),
        }, { signal: controller.signal });
        let pieces = 0;
        for await (const c of stream) {
            if (c.choices[0]?.delta?.content && ++pieces === 3) {
                controller.abort(); // the connection goes away with 37 pieces to come
                break;
            }
        }
        assert.equal(pieces, 3);
        let rec = null;
        for (let i = 0; i < 100 && !rec; i++) {
            rec = (await usageRecords()).find((r) => r.model === 'vendorB-6-astra');
            if (!rec) await sleep(100);
        }
        assert.ok(rec, 'a usage record for the abandoned stream');
        assert.ok(rec.units.output_tokens >= 3, JSON.stringify(rec));
        assert.ok(rec.units.input_tokens > 0, JSON.stringify(rec));
        const price = priceOf((await stack.models()).find((m) => m.id === 'vendorB-6-astra'));
        assert.equal(BigInt(rec.cost_units), expectedCost({
            input: rec.units.input_tokens, output: rec.units.output_tokens,
            cacheRead: rec.units.cache_read_tokens, cacheWrite: rec.units.cache_write_tokens,
        }, price));
        assert.ok(BigInt(rec.cost_units) > 0n);
    });

    test('balance = granted - sum of usage costs; the ledger agrees', async () => {
        const records = await usageRecords();
        const charged = records.reduce((s, r) => s + BigInt(r.cost_units), 0n);
        const bal = await stack.control('/api/v1/credits/balance');
        assert.equal(BigInt(bal.balance_units), granted - charged);
        assert.ok(charged > 0n);
        const units = BigInt(bal.balance_units);
        assert.equal(bal.balance,
            `${units / UNITS_PER_CREDIT}.${String(units % UNITS_PER_CREDIT).padStart(9, '0')}`);

        const ledger = await stack.control('/api/v1/credits/ledger?limit=1000');
        const byRequest = new Map(records.filter((r) => BigInt(r.cost_units) > 0n)
            .map((r) => [r.request_id, BigInt(r.cost_units)]));
        const charges = ledger.data.filter((e) => e.request_id);
        assert.equal(charges.length, byRequest.size, 'one ledger entry per billed request');
        for (const e of charges) {
            assert.ok(byRequest.has(e.request_id), `ledger entry for a usage record: ${e.request_id}`);
            const amount = e.amount.startsWith('-') ? e.amount.slice(1) : e.amount;
            const [w, f] = amount.split('.');
            assert.equal(BigInt(w) * UNITS_PER_CREDIT + BigInt(f), byRequest.get(e.request_id),
                `ledger amount of ${e.request_id}`);
        }
    });
});

// The client: a small balance and an 800 KB prompt to an expensive model. Every
// request holds its worst case (the prompt's bytes as tokens at the model's input price, and
// max_tokens at its output price) before its upstream call, so both SDK families see a typed
// 402 at once, nothing reaches the upstream and nothing is charged; a small request still fits.
describe('holds: a large prompt against a small balance', () => {
    let small;
    const prompt = 'Summarise the following report carefully. '.repeat(20_000); // ~840 KB
    before(async () => {
        small = await Stack.start({ credits: '0.05' });
    });
    after(async () => {
        await small?.stop();
    });

    test('refused with a typed 402 on every endpoint and SDK, nothing charged', async () => {
        assert.ok(prompt.length > 800 * 1024);
        const mark = small.fake.mark();
        const oa = new OpenAI({ apiKey: small.apiKey, baseURL: `${small.url}/v1`, maxRetries: 0 });
        const refusals = [
            () => oa.chat.completions.create({
                model: 'vendorA-opus-4-8', max_tokens: 1024, messages: user(prompt) }),
            () => oa.chat.completions.create({
                model: 'vendorB-6-astra', messages: user(prompt), stream: true }),
            () => oa.responses.create({ model: 'vendorB-6-astra', input: prompt,
                max_output_tokens: 16 }),
        ];
        for (const call of refusals) {
            const e = await rejects(call);
            assert.ok(e instanceof OpenAI.APIError, String(e));
            assert.equal(e.status, 402);
            assert.equal(e.error?.type, 'insufficient_credits', JSON.stringify(e.error));
            assert.match(e.error.message, /^Insufficient credits/);
        }
        for (const Sdk of [Anthropic, Anthropic1]) {
            const client = new Sdk({ apiKey: small.apiKey, baseURL: small.url, maxRetries: 0 });
            for (const stream of [false, true]) {
                const e = await rejects(() => client.messages.create({
                    model: 'vendorA-opus-4-8', max_tokens: 1024, messages: user(prompt), stream }));
                assert.ok(e instanceof Sdk.APIError, String(e));
                assert.equal(e.status, 402);
                assert.equal(e.error?.type, 'error', JSON.stringify(e.error));
                assert.equal(e.error.error?.type, 'billing_error', JSON.stringify(e.error));
            }
        }
        assert.equal(small.fake.mark(), mark, 'nothing reached the upstream');
        assert.equal((await small.control('/api/v1/credits/balance')).balance_units, '50000000');

        // A request whose worst case fits is served and charged what it cost.
        const m = await new Anthropic({ apiKey: small.apiKey, baseURL: small.url, maxRetries: 0 })
            .messages.create({ model: 'vendorA-haiku-4-5', max_tokens: 16, messages: user('hi') });
        const price = priceOf((await small.models()).find((x) => x.id === 'vendorA-haiku-4-5'));
        const cost = expectedCost(fromMessages(m.usage), price);
        assert.equal(BigInt(await small.settledBalance()), 50_000_000n - cost);
        const ledger = await small.control('/api/v1/credits/ledger?limit=100');
        assert.equal(ledger.data.filter((e) => e.request_id).length, 1, 'one charge');
    });
});
