// @anthropic-ai/sdk 0.137 (anthropic-version 2023-06-01, x-api-key) and 1.x (2026-10-21,
// Authorization: Bearer) against the real switchyard-server's /v1/messages, whose providers
// point at tests/fake_upstream: non-streaming, streaming helpers, tool use, vendorC models.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic0 from '@anthropic-ai/sdk';
import Anthropic1 from 'anthropic1';
import { Stack, UPSTREAM_KEYS, masked } from './lib/harness.mjs';
import { fakePromptTokens, messagesWeatherTool, user } from './lib/util.mjs';

let stack;

before(async () => {
    stack = await Stack.start();
});

after(async () => {
    await stack?.stop();
});

async function upstreamOf(fn) {
    const mark = stack.fake.mark();
    const result = await fn();
    return { result, upstream: stack.fake.requestsSince(mark) };
}

const sdks = [
    { name: '@anthropic-ai/sdk 0.137', Anthropic: Anthropic0, version: '2023-06-01' },
    { name: '@anthropic-ai/sdk 1.x', Anthropic: Anthropic1, version: '2026-10-21' },
];

for (const { name, Anthropic, version } of sdks) {
    describe(name, () => {
        let client;
        before(() => {
            client = new Anthropic({ apiKey: stack.apiKey, baseURL: stack.url, maxRetries: 0,
                timeout: 30_000 });
        });

        test('non-streaming message; version header forwarded, upstream key used', async () => {
            const { result: m, upstream } = await upstreamOf(() => client.messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, messages: user('hello world'),
            }));
            assert.equal(m.type, 'message');
            assert.equal(m.role, 'assistant');
            assert.equal(m.model, 'vendorA-sonnet-4-6');
            assert.deepEqual(m.content.map((b) => b.type), ['text']);
            assert.equal(m.content[0].text, 'Echo: hello world');
            assert.equal(m.stop_reason, 'end_turn');
            assert.equal(m.usage.input_tokens, 5);
            assert.equal(m.usage.output_tokens, 8);
            assert.equal(m.usage.cache_read_input_tokens ?? 0, 0);
            assert.equal(m.usage.cache_creation_input_tokens ?? 0, 0);
            assert.match(m.id, /^msg_/);

            assert.equal(upstream.length, 1);
            const u = upstream[0];
            assert.equal(u.path, '/v1/messages');
            assert.equal(u.headers['anthropic-version'], version,
                'the SDK\'s anthropic-version goes upstream');
            assert.equal(u.headers['x-api-key'], masked(UPSTREAM_KEYS.anthropic[0]));
            assert.ok(!u.headers.authorization, `no client credential upstream: ${u.headers.authorization}`);
            assert.equal(u.json.model, 'vendorA-sonnet-4-6');
            assert.equal(u.json.max_tokens, 256);
        });

        test('system prompt counts as a message upstream', async () => {
            const m = await client.messages.create({
                model: 'vendorA-haiku-4-5', max_tokens: 64, system: 'Be brief please.',
                messages: user('hello world'),
            });
            assert.equal(m.usage.input_tokens, fakePromptTokens('Be brief please.', 'hello world'));
            assert.equal(m.content[0].text, 'Echo: hello world');
        });

        test('streaming: messages.stream, text events, finalMessage usage', async () => {
            const stream = client.messages.stream({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, messages: user('stream this'),
            });
            let text = '';
            stream.on('text', (t) => { text += t; });
            const types = [];
            stream.on('streamEvent', (e) => types.push(e.type));
            const final = await stream.finalMessage();
            assert.equal(text, 'Echo: stream this');
            assert.equal(final.content[0].text, 'Echo: stream this');
            assert.equal(final.model, 'vendorA-sonnet-4-6');
            assert.equal(final.stop_reason, 'end_turn');
            assert.equal(final.usage.input_tokens, 5);
            assert.equal(final.usage.output_tokens, 8);
            assert.equal(types[0], 'message_start');
            assert.equal(types[types.length - 1], 'message_stop');
            for (const t of ['content_block_start', 'content_block_delta', 'content_block_stop',
                'message_delta'])
                assert.ok(types.includes(t), `${t} in ${types.join(',')}`);
            assert.equal(types.filter((t) => t === 'content_block_delta').length, 8);
        });

        test('streaming: raw events from create({stream: true}) carry the split usage', async () => {
            const stream = await client.messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, messages: user('hello world'),
                stream: true,
            });
            let start = null;
            let delta = null;
            let text = '';
            for await (const e of stream) {
                if (e.type === 'message_start') start = e.message;
                if (e.type === 'message_delta') delta = e;
                if (e.type === 'content_block_delta' && e.delta.type === 'text_delta')
                    text += e.delta.text;
            }
            assert.equal(text, 'Echo: hello world');
            assert.equal(start.model, 'vendorA-sonnet-4-6');
            assert.equal(start.usage.input_tokens, 5);
            assert.equal(delta.usage.output_tokens, 8);
            assert.equal(delta.delta.stop_reason, 'end_turn');
        });

        test('tool use: non-streaming, streaming, then the tool result', async () => {
            const messages = user('What is the weather in Lyon?');
            const m = await client.messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, messages, tools: [messagesWeatherTool],
            });
            assert.equal(m.stop_reason, 'tool_use');
            const block = m.content.find((b) => b.type === 'tool_use');
            assert.ok(block, JSON.stringify(m.content));
            assert.equal(block.name, 'get_weather');
            assert.match(block.id, /^toolu_/);
            assert.deepEqual(block.input, { location: 'What is the weather in Lyon?' });

            const final = await client.messages.stream({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, tools: [messagesWeatherTool],
                messages: user('hello [fake tool=1 chunks=3]'),
            }).finalMessage();
            assert.equal(final.stop_reason, 'tool_use');
            const sblock = final.content.find((b) => b.type === 'tool_use');
            assert.deepEqual(sblock.input, { location: 'hello [fake tool=1 chunks=3]' });

            const answer = await client.messages.create({
                model: 'vendorA-sonnet-4-6', max_tokens: 256, tools: [messagesWeatherTool],
                messages: [...messages, { role: 'assistant', content: m.content },
                    { role: 'user', content: [
                        { type: 'tool_result', tool_use_id: block.id, content: 'foggy' }] }],
            });
            assert.equal(answer.stop_reason, 'end_turn');
            assert.equal(answer.content[0].text, 'Echo: What is the weather in Lyon?');
        });

        test('max_tokens below the answer: stop_reason max_tokens', async () => {
            const m = await client.messages.create({
                model: 'vendorA-haiku-4-5', max_tokens: 2, messages: user('hello world'),
            });
            assert.equal(m.stop_reason, 'max_tokens');
            assert.equal(m.usage.output_tokens, 2);
        });

        test('thinking and other fields pass through unchanged', async () => {
            const thinking = { type: 'enabled', budget_tokens: 1024 };
            const { upstream } = await upstreamOf(() => client.messages.create({
                model: 'vendorA-opus-4-8', max_tokens: 2048, thinking, messages: user('think'),
                metadata: { user_id: 'e2e' }, stop_sequences: ['END'],
            }));
            assert.deepEqual(upstream[0].json.thinking, thinking);
            assert.deepEqual(upstream[0].json.metadata, { user_id: 'e2e' });
            assert.deepEqual(upstream[0].json.stop_sequences, ['END']);
        });

        test('vendorC models over messages (deepseek provider)', async () => {
            const { result: m, upstream } = await upstreamOf(() => client.messages.create({
                model: 'vendorC-v4-flash', max_tokens: 128, messages: user('hello deepseek'),
            }));
            assert.equal(m.model, 'vendorC-v4-flash');
            assert.equal(m.content[0].text, 'Echo: hello deepseek');
            assert.equal(m.usage.output_tokens, 8);
            assert.equal(upstream[0].headers['x-api-key'], masked(UPSTREAM_KEYS.deepseek[0]));
            assert.equal(upstream[0].json.model, 'vendorC-v4-flash');

            const final = await client.messages.stream({
                model: 'vendorC-v4-pro', max_tokens: 128, messages: user('hello deepseek'),
            }).finalMessage();
            assert.equal(final.model, 'vendorC-v4-pro');
            assert.equal(final.content[0].text, 'Echo: hello deepseek');
            assert.equal(final.usage.output_tokens, 8);
        });
    });
}
