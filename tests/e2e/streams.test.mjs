// Streams and upstream failures the SDKs must see for what they are: many concurrent upstream
// calls (no accidental cap), upstream streams that break, stall or send an error half-way
// (the client must get an error, never a stream that looks complete), keep-alives.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import Anthropic1 from 'anthropic1';
import { Stack } from './lib/harness.mjs';
import { readSse, rejects, user } from './lib/util.mjs';

let stack;
let openai;
const idleMs = 800;
const keepAliveMs = 200;

before(async () => {
    stack = await Stack.start({
        gateway: { keepalive_ms: keepAliveMs },
        // vendorA models (provider anthropic) time out after idleMs of upstream silence.
        providers: (fake, p) => ({
            ...p,
            anthropic: { ...p.anthropic, timeouts: { connect_ms: 2000, first_byte_ms: 5000,
                idle_ms: idleMs, total_ms: 30000, messages_ms: 30000 } },
        }),
    });
    openai = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0,
        timeout: 30_000 });
});

after(async () => {
    await stack?.stop();
});

const balanceUnits = () => stack.settledBalance();

async function rawChat(body) {
    const r = await fetch(`${stack.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
    });
    return { status: r.status, events: r.status === 200 ? await readSse(r) : [] };
}

describe('concurrency', () => {
    test('24 concurrent calls to one upstream run at once (no 6-connection cap)', async () => {
        await fetch(`${stack.fake.url}/fake/reset`, { method: 'POST' });
        const n = 24;
        const delay = 1000;
        const t0 = Date.now();
        const calls = [];
        for (let i = 0; i < n; i++) {
            const content = `call ${i} [fake delay-ms=${delay} chunks=2]`;
            calls.push(i % 2
                ? openai.chat.completions.create({ model: 'vendorB-6-luna', messages: user(content) })
                    .then((r) => r.choices[0].message.content)
                : openai.chat.completions.create({ model: 'vendorB-6-luna', messages: user(content),
                    stream: true }).then(async (s) => {
                    let text = '';
                    for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
                    return text;
                }));
        }
        const texts = await Promise.all(calls);
        const ms = Date.now() - t0;
        texts.forEach((t, i) => assert.equal(t, `Echo: call ${i} [fake delay-ms=${delay} chunks=2]`));
        const stats = await (await fetch(`${stack.fake.url}/fake/stats`)).json();
        assert.ok(stats.max_open_requests >= n,
            `the upstream saw at most ${stats.max_open_requests} of ${n} calls at once`);
        assert.ok(ms < 2.5 * delay, `${n} calls of ${delay} ms took ${ms} ms`);
    });
});

describe('broken upstream streams', () => {
    test('chat: error half-way reaches the SDK as an error, after the first pieces', async () => {
        let text = '';
        const e = await rejects(async () => {
            const s = await openai.chat.completions.create({ model: 'vendorB-6-luna', stream: true,
                messages: user('half then boom [fake fault=error-mid-stream:3 chunks=8]') });
            for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
        });
        assert.ok(e instanceof OpenAI.APIError, String(e));
        assert.ok(text.length > 0 && 'Echo: half then boom [fake fault=error-mid-stream:3 chunks=8]'
            .startsWith(text), `the pieces before the error: ${JSON.stringify(text)}`);
    });

    test('chat: upstream connection reset half-way is not a complete stream', async () => {
        const msg = 'half then reset [fake fault=reset-mid-stream:2 chunks=8]';
        const r = await rawChat({ model: 'vendorB-6-luna', stream: true, messages: user(msg) });
        assert.equal(r.status, 200);
        assert.notEqual(r.events.at(-1)?.data, '[DONE]',
            `a broken stream must not end with [DONE]: ${JSON.stringify(r.events.slice(-2))}`);
        const e = await rejects(async () => {
            const s = await openai.chat.completions.create({ model: 'vendorB-6-luna', stream: true,
                messages: user(msg) });
            for await (const _ of s) { /* drain */ }
        }, 'the SDK must see the broken stream as an error');
        assert.ok(e instanceof OpenAI.APIError || e instanceof Error, String(e));
    });

    test('chat on a vendorA model: upstream stalls past idle_ms -> error, not a clean end', async () => {
        const msg = 'stall [fake fault=stall-mid-stream:2 chunks=8]';
        const t0 = Date.now();
        const r = await rawChat({ model: 'vendorA-haiku-4-5', stream: true, messages: user(msg) });
        const ms = Date.now() - t0;
        assert.equal(r.status, 200);
        assert.notEqual(r.events.at(-1)?.data, '[DONE]',
            `a stalled stream must not end with [DONE]: ${JSON.stringify(r.events.slice(-2))}`);
        assert.ok(ms >= idleMs - 50 && ms < idleMs * 5, `ended after ${ms} ms, idle_ms ${idleMs}`);
    });

    for (const [name, Sdk] of [['sdk 0.137', Anthropic], ['sdk 1.x', Anthropic1]]) {
        test(`messages (${name}): overloaded error half-way throws from the stream`, async () => {
            const client = new Sdk({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 });
            let text = '';
            const e = await rejects(async () => {
                const s = client.messages.stream({ model: 'vendorA-sonnet-4-6', max_tokens: 64,
                    messages: user('boom [fake fault=error-mid-stream:2 chunks=8]') });
                s.on('text', (t) => { text += t; });
                await s.finalMessage();
            });
            assert.ok(e instanceof Sdk.APIError, String(e));
            assert.ok(text.length > 0, 'pieces before the error arrived');
        });

        test(`messages (${name}): upstream reset half-way throws, no message_stop`, async () => {
            const client = new Sdk({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 });
            const types = [];
            await rejects(async () => {
                const s = await client.messages.create({ model: 'vendorA-sonnet-4-6', max_tokens: 64,
                    stream: true, messages: user('reset [fake fault=reset-mid-stream:2 chunks=8]') });
                for await (const ev of s) types.push(ev.type);
            }, 'the SDK must see the broken stream as an error');
            assert.ok(!types.includes('message_stop'), types.join(','));
        });
    }

    test('responses: upstream error half-way throws from the SDK', async () => {
        const e = await rejects(async () => {
            const s = await openai.responses.create({ model: 'vendorB-6-luna', stream: true,
                input: 'boom [fake fault=error-mid-stream:2 chunks=8]' });
            for await (const ev of s) {
                if (ev.type === 'response.completed') throw new Error('completed despite the error');
                if (ev.type === 'error' || ev.type === 'response.failed') throw Object.assign(
                    new OpenAI.APIError(undefined, ev, 'stream error', undefined), { ev });
            }
        });
        assert.ok(e instanceof OpenAI.APIError, String(e));
    });
});

describe('upstream answers that are not usable', () => {
    test('a 500 from the upstream is a 5xx for the client, not billed', async () => {
        const before = await balanceUnits();
        const e = await rejects(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('fail [fake fault=500]') }));
        assert.ok(e instanceof OpenAI.InternalServerError, String(e));
        assert.ok(e.status >= 500, String(e.status));
        assert.equal(await balanceUnits(), before);
    });

    test('a cut JSON body from the upstream is a 502 on every path, not billed', async () => {
        const before = await balanceUnits();
        const content = 'cut [fake fault=malformed-json]';
        const paths = [
            ['chat, vendorB (pass-through)', '/v1/chat/completions',
                { model: 'vendorB-6-luna', messages: user(content) }],
            ['chat, vendorA (translated)', '/v1/chat/completions',
                { model: 'vendorA-sonnet-4-6', messages: user(content) }],
            ['responses', '/v1/responses', { model: 'vendorB-6-luna', input: content }],
            ['messages', '/v1/messages',
                { model: 'vendorA-sonnet-4-6', max_tokens: 64, messages: user(content) }],
        ];
        const wrong = [];
        for (const [what, path, body] of paths) {
            const r = await fetch(`${stack.url}${path}`, {
                method: 'POST',
                headers: { Authorization: `Bearer ${stack.apiKey}`, 'anthropic-version': '2023-06-01',
                    'Content-Type': 'application/json' },
                body: JSON.stringify(body),
            });
            const text = await r.text();
            let json = null;
            try { json = JSON.parse(text); } catch { /* reported below */ }
            if (r.status !== 502 || !json?.error)
                wrong.push(`${what}: ${r.status} ${text.slice(0, 120)}`);
        }
        assert.deepEqual(wrong, [], 'every path answers 502 with an error body');
        // Through the SDK: a typed 502, not a JSON SyntaxError.
        const e = await rejects(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user(content) }));
        assert.ok(e instanceof OpenAI.InternalServerError, String(e));
        assert.equal(await balanceUnits(), before, 'not billed');
    });
});

describe('payloads', () => {
    const text = 'héllo wörld — 你好，世界 🎉👩‍💻 ünïcödé [fake chunks=17]';

    test('multi-byte text split over many events arrives intact on every path', async () => {
        const chat = async (model) => {
            let t = '';
            for await (const c of await openai.chat.completions.create({ model, stream: true,
                messages: user(text) }))
                t += c.choices[0]?.delta?.content ?? '';
            return t;
        };
        assert.equal(await chat('vendorB-6-luna'), `Echo: ${text}`);
        assert.equal(await chat('vendorA-sonnet-4-6'), `Echo: ${text}`);
        const nonStream = await openai.chat.completions.create({ model: 'vendorA-sonnet-4-6',
            messages: user(text) });
        assert.equal(nonStream.choices[0].message.content, `Echo: ${text}`);
        const resp = await openai.responses.stream({ model: 'vendorB-6-luna', input: text })
            .finalResponse();
        assert.equal(resp.output_text, `Echo: ${text}`);
        for (const Sdk of [Anthropic, Anthropic1]) {
            const m = await new Sdk({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 })
                .messages.stream({ model: 'vendorA-sonnet-4-6', max_tokens: 64, messages: user(text) })
                .finalMessage();
            assert.equal(m.content[0].text, `Echo: ${text}`);
        }
    });

    test('a 900 KB prompt reaches the upstream whole', async () => {
        const words = 150_000;
        const big = 'word '.repeat(words);
        for (const model of ['vendorB-6-luna', 'vendorA-sonnet-4-6']) {
            const r = await openai.chat.completions.create({ model, messages: user(big) });
            assert.equal(r.usage.prompt_tokens, 3 + words, model);
            assert.ok(r.choices[0].message.content === `Echo: ${big}`, `${model}: the whole text echoed`);
        }
    });
});

describe('keep-alive', () => {
    test('silent upstream gaps are filled with SSE comments the SDKs ignore', async () => {
        // keepalive_ms is 200; a 1.5 s gap between the two pieces must carry a comment
        // (the gateway checks once a second).
        const msg = 'slow [fake chunks=2 interval-ms=1500]';
        const r = await fetch(`${stack.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'vendorB-6-luna', stream: true, messages: user(msg) }),
        });
        const raw = await r.text();
        assert.match(raw, /(^|\n):[^\n]*\n/, 'an SSE comment line during the 1.5 s gap');
        assert.match(raw, /data: \[DONE\]\s*$/);

        const [text, final] = await Promise.all([
            openai.chat.completions.create({ model: 'vendorB-6-luna', stream: true,
                messages: user(msg) }).then(async (s) => {
                let t = '';
                for await (const c of s) t += c.choices[0]?.delta?.content ?? '';
                return t;
            }),
            new Anthropic({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0 }).messages
                .stream({ model: 'vendorC-v4-flash', max_tokens: 64, messages: user(msg) })
                .finalMessage(),
        ]);
        assert.equal(text, `Echo: ${msg}`);
        assert.equal(final.content[0].text, `Echo: ${msg}`);
    });
});
