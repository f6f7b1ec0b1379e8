// The openai@6 SDK against the real switchyard-server, whose providers all point at
// tests/fake_upstream: chat completions (vendorB pass-through, vendorA/vendorC translated to
// the messages protocol upstream, gateway/* through the catalog provider), the responses API,
// streaming, tool calls, JSON mode, model auto.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { Stack, UPSTREAM_KEYS, masked } from './lib/harness.mjs';
import {
    chatWeatherTool, fakePromptTokens, readSse, user,
} from './lib/util.mjs';

let stack;
let openai;

before(async () => {
    stack = await Stack.start();
    openai = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0,
        timeout: 30_000 });
});

after(async () => {
    await stack?.stop();
});

// The upstream requests made while fn ran.
async function upstreamOf(fn) {
    const mark = stack.fake.mark();
    const result = await fn();
    return { result, upstream: stack.fake.requestsSince(mark) };
}

async function collect(stream) {
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    return chunks;
}

const deltaText = (chunks) =>
    chunks.flatMap((c) => c.choices.map((ch) => ch.delta?.content ?? '')).join('');
const finishOf = (chunks) =>
    chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);

describe('chat completions, vendorB (OpenAI-style upstream)', () => {
    test('non-streaming: the fake\'s text, usage, resolved model; upstream got our key', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('hello world'),
        }));
        assert.equal(r.object, 'chat.completion');
        assert.equal(r.model, 'vendorB-6-luna');
        assert.equal(r.choices.length, 1);
        assert.equal(r.choices[0].message.role, 'assistant');
        assert.equal(r.choices[0].message.content, 'Echo: hello world');
        assert.equal(r.choices[0].finish_reason, 'stop');
        assert.deepEqual(
            [r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens], [5, 8, 13]);
        assert.equal(typeof r.created, 'number');
        assert.ok(r.id, 'id');
        assert.ok(r._request_id, 'the gateway sends X-Request-Id');

        assert.equal(upstream.length, 1, 'one upstream call');
        const u = upstream[0];
        assert.equal(u.method, 'POST');
        assert.equal(u.path, '/v1/chat/completions');
        assert.equal(u.json.model, 'vendorB-6-luna');
        assert.ok(UPSTREAM_KEYS.openai.map((k) => `Bearer ${masked(k)}`)
            .includes(u.headers.authorization),
            `an upstream key of the openai provider, never the client key: ${u.headers.authorization}`);
    });

    test('streaming without include_usage: deltas join to the text, no usage chunk', async () => {
        const stream = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('hello world'), stream: true,
        });
        const chunks = await collect(stream);
        assert.ok(chunks.length >= 8, `8 pieces at least, got ${chunks.length} chunks`);
        assert.equal(deltaText(chunks), 'Echo: hello world');
        assert.deepEqual(finishOf(chunks), ['stop']);
        for (const c of chunks) {
            assert.equal(c.object, 'chat.completion.chunk');
            assert.equal(c.model, 'vendorB-6-luna');
            assert.ok(c.usage === undefined || c.usage === null,
                `no usage unless asked: ${JSON.stringify(c)}`);
            assert.ok(c.choices.length > 0, `no usage-only chunk: ${JSON.stringify(c)}`);
        }
        assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one id for the whole stream');
    });

    test('streaming with include_usage: one final usage chunk', async () => {
        const chunks = await collect(await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('hello world'), stream: true,
            stream_options: { include_usage: true },
        }));
        assert.equal(deltaText(chunks), 'Echo: hello world');
        const withUsage = chunks.filter((c) => c.usage);
        assert.equal(withUsage.length, 1, 'exactly one usage chunk');
        const last = chunks[chunks.length - 1];
        assert.equal(withUsage[0], last, 'the usage chunk comes last');
        assert.deepEqual(last.choices, []);
        assert.deepEqual(
            [last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens],
            [5, 8, 13]);
    });

    test('raw stream: text/event-stream, ends with data: [DONE]', async () => {
        const r = await fetch(`${stack.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'vendorB-6-luna', messages: user('hi'), stream: true }),
        });
        assert.equal(r.status, 200);
        assert.match(r.headers.get('content-type'), /^text\/event-stream/);
        const events = await readSse(r);
        assert.equal(events[events.length - 1].data, '[DONE]');
        assert.equal(events.filter((e) => e.data === '[DONE]').length, 1);
        for (const e of events.slice(0, -1))
            assert.equal(JSON.parse(e.data).object, 'chat.completion.chunk');
    });

    test('streaming is relayed as it arrives, not buffered', async () => {
        // 4 pieces 400 ms apart upstream: the first must reach us long before the last.
        const started = Date.now();
        const stream = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('slow [fake chunks=4 interval-ms=400]'),
            stream: true,
        });
        const arrivals = [];
        let text = '';
        for await (const c of stream) {
            const piece = c.choices[0]?.delta?.content;
            if (piece) {
                arrivals.push(Date.now() - started);
                text += piece;
            }
        }
        assert.equal(text, 'Echo: slow [fake chunks=4 interval-ms=400]');
        assert.equal(arrivals.length, 4);
        assert.ok(arrivals[3] - arrivals[0] >= 900,
            `pieces arrived at ${arrivals.join(', ')} ms: the stream was buffered`);
    });

    test('stream helper: finalChatCompletion', async () => {
        const final = await openai.chat.completions
            .stream({ model: 'vendorB-6-luna', messages: user('a b c') })
            .finalChatCompletion();
        assert.equal(final.choices[0].message.content, 'Echo: a b c');
        assert.equal(final.choices[0].finish_reason, 'stop');
    });

    test('tool call (trigger word), then the tool result gets a text answer', async () => {
        const messages = user('What is the weather in Paris?');
        const r = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages, tools: [chatWeatherTool],
        });
        assert.equal(r.choices[0].finish_reason, 'tool_calls');
        const call = r.choices[0].message.tool_calls[0];
        assert.equal(call.type, 'function');
        assert.equal(call.function.name, 'get_weather');
        assert.match(call.id, /^call_/);
        assert.deepEqual(JSON.parse(call.function.arguments),
            { location: 'What is the weather in Paris?' });

        const r2 = await openai.chat.completions.create({
            model: 'vendorB-6-luna', tools: [chatWeatherTool],
            messages: [...messages, r.choices[0].message,
                { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' }],
        });
        assert.equal(r2.choices[0].finish_reason, 'stop');
        assert.equal(r2.choices[0].message.content, 'Echo: What is the weather in Paris?');
    });

    test('tool call forced by the fake directive, streamed, parsed by the SDK', async () => {
        const text = 'hello [fake tool=1 chunks=3]';
        const final = await openai.chat.completions.stream({
            model: 'vendorB-6-luna', messages: user(text),
            tools: [{ ...chatWeatherTool,
                function: { ...chatWeatherTool.function, strict: true } }],
        }).finalChatCompletion();
        assert.equal(final.choices[0].finish_reason, 'tool_calls');
        const call = final.choices[0].message.tool_calls[0];
        assert.equal(call.function.name, 'get_weather');
        assert.deepEqual(call.function.parsed_arguments, { location: text });
    });

    test('JSON mode: response_format passes through', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorB-5.4-mini', messages: user('json please'),
            response_format: { type: 'json_object' },
        }));
        assert.deepEqual(upstream[0].json.response_format, { type: 'json_object' });
        assert.deepEqual(JSON.parse(r.choices[0].message.content), { echo: 'json please' });
        assert.equal(r.model, 'vendorB-5.4-mini');
    });

    test('other request fields pass through to the upstream', async () => {
        const { upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('x'), seed: 7, user: 'e2e-user',
            temperature: 0.2, top_p: 0.9, max_tokens: 50, stop: ['a', 'b', 'c', 'd'],
        }));
        const body = upstream[0].json;
        assert.equal(body.seed, 7);
        assert.equal(body.user, 'e2e-user');
        assert.equal(body.temperature, 0.2);
        assert.equal(body.top_p, 0.9);
        assert.deepEqual(body.stop, ['a', 'b', 'c', 'd']);
    });

    test('max_tokens below the answer: finish_reason length', async () => {
        const r = await openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('hello world'), max_tokens: 3,
        });
        assert.equal(r.choices[0].finish_reason, 'length');
        assert.equal(r.usage.completion_tokens, 3);
    });

    test('model auto resolves to vendorB-6-luna (response and upstream)', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'auto', messages: user('hello world'),
        }));
        assert.equal(r.model, 'vendorB-6-luna');
        assert.equal(r.choices[0].message.content, 'Echo: hello world');
        assert.equal(upstream[0].json.model, 'vendorB-6-luna');

        const chunks = await collect(await openai.chat.completions.create({
            model: 'auto', messages: user('hello world'), stream: true,
        }));
        assert.equal(deltaText(chunks), 'Echo: hello world');
        for (const c of chunks) assert.equal(c.model, 'vendorB-6-luna');
    });

    test('client credentials, cookies and x-fake-* headers are not forwarded upstream', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorB-6-luna', messages: user('no trigger here'), tools: [chatWeatherTool],
        }, { headers: { 'x-fake-tool': '1', Cookie: 'session=e2e-secret', 'X-API-Key': stack.apiKey } }));
        const h = upstream[0].headers;
        assert.ok(!('cookie' in h), JSON.stringify(h));
        assert.ok(!('x-api-key' in h), JSON.stringify(h));
        assert.ok(!('x-fake-tool' in h), JSON.stringify(h));
        assert.match(h.authorization, /^Bearer \*\*\*/, 'the upstream key, masked by the fake');
        // so the fake's header did not force a tool call
        assert.equal(r.choices[0].finish_reason, 'stop');
    });

    test('the key also works as X-API-Key', async () => {
        const r = await fetch(`${stack.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'X-API-Key': stack.apiKey, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'vendorB-6-luna', messages: user('by header') }),
        });
        assert.equal(r.status, 200);
        assert.equal((await r.json()).choices[0].message.content, 'Echo: by header');
    });

    test('models list: public, has auto and the catalog\'s models', async () => {
        const ids = [];
        for await (const m of openai.models.list()) ids.push(m.id);
        for (const id of ['auto', 'vendorB-6-luna', 'vendorA-sonnet-4-6', 'vendorC-v4-flash'])
            assert.ok(ids.includes(id), `${id} in ${ids.join(', ')}`);
    });
});

describe('chat completions on vendorA/vendorC models (messages protocol upstream)', () => {
    test('non-streaming: translated both ways', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6',
            messages: [{ role: 'system', content: 'Be brief.' }, ...user('hello world')],
        }));
        assert.equal(r.object, 'chat.completion');
        assert.equal(r.model, 'vendorA-sonnet-4-6');
        assert.equal(r.choices[0].message.role, 'assistant');
        assert.equal(r.choices[0].message.content, 'Echo: hello world');
        assert.equal(r.choices[0].finish_reason, 'stop');
        const prompt = fakePromptTokens('Be brief.', 'hello world');
        assert.deepEqual(
            [r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens],
            [prompt, 8, prompt + 8]);

        assert.equal(upstream.length, 1);
        const u = upstream[0];
        assert.equal(u.path, '/v1/messages');
        assert.equal(u.headers['x-api-key'], masked(UPSTREAM_KEYS.anthropic[0]));
        assert.ok(u.headers['anthropic-version'], 'anthropic-version sent upstream');
        assert.equal(u.json.model, 'vendorA-sonnet-4-6');
        assert.equal(typeof u.json.max_tokens, 'number', 'messages needs max_tokens');
        assert.ok(JSON.stringify(u.json.system ?? '').includes('Be brief.'), 'system moved');
        assert.ok(u.json.messages.every((m) => m.role !== 'system'));
    });

    test('streaming with include_usage: chat chunks, [DONE], usage', async () => {
        const chunks = await collect(await openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6', messages: user('hello world'), stream: true,
            stream_options: { include_usage: true },
        }));
        assert.equal(deltaText(chunks), 'Echo: hello world');
        assert.deepEqual(finishOf(chunks), ['stop']);
        for (const c of chunks) {
            assert.equal(c.object, 'chat.completion.chunk');
            assert.equal(c.model, 'vendorA-sonnet-4-6');
        }
        const usage = chunks.filter((c) => c.usage);
        assert.equal(usage.length, 1);
        assert.deepEqual(usage[0].choices, []);
        assert.deepEqual([usage[0].usage.prompt_tokens, usage[0].usage.completion_tokens,
            usage[0].usage.total_tokens], [5, 8, 13]);
    });

    test('streaming without include_usage: no usage chunk; raw stream ends with [DONE]', async () => {
        const chunks = await collect(await openai.chat.completions.create({
            model: 'vendorA-haiku-4-5', messages: user('hello world'), stream: true,
        }));
        assert.equal(deltaText(chunks), 'Echo: hello world');
        assert.ok(chunks.every((c) => !c.usage && c.choices.length > 0),
            JSON.stringify(chunks.filter((c) => c.usage || !c.choices.length)));

        const r = await fetch(`${stack.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ model: 'vendorA-haiku-4-5', messages: user('hi'), stream: true }),
        });
        assert.equal(r.status, 200);
        const events = await readSse(r);
        assert.equal(events[events.length - 1].data, '[DONE]');
    });

    test('tool calls translated (non-streaming and streaming)', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6', messages: user('weather in Oslo?'),
            tools: [chatWeatherTool],
        }));
        assert.equal(upstream[0].json.tools[0].name, 'get_weather', 'tools in messages shape');
        assert.ok(upstream[0].json.tools[0].input_schema, 'input_schema upstream');
        assert.equal(r.choices[0].finish_reason, 'tool_calls');
        const call = r.choices[0].message.tool_calls[0];
        assert.equal(call.type, 'function');
        assert.equal(call.function.name, 'get_weather');
        assert.ok(call.id, 'tool call id');
        assert.deepEqual(JSON.parse(call.function.arguments), { location: 'weather in Oslo?' });

        const final = await openai.chat.completions.stream({
            model: 'vendorA-sonnet-4-6', messages: user('hello [fake tool=1 chunks=3]'),
            tools: [chatWeatherTool],
        }).finalChatCompletion();
        assert.equal(final.choices[0].finish_reason, 'tool_calls');
        const scall = final.choices[0].message.tool_calls[0];
        assert.equal(scall.function.name, 'get_weather');
        assert.deepEqual(JSON.parse(scall.function.arguments),
            { location: 'hello [fake tool=1 chunks=3]' });

        // The tool result goes back as a tool_result block and gets a text answer.
        const r2 = await openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6', tools: [chatWeatherTool],
            messages: [...user('weather in Oslo?'), r.choices[0].message,
                { role: 'tool', tool_call_id: call.id, content: 'rain' }],
        });
        assert.equal(r2.choices[0].finish_reason, 'stop');
        assert.equal(r2.choices[0].message.content, 'Echo: weather in Oslo?');
    });

    test('max_tokens maps to the messages max_tokens; stop reason max_tokens is length', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorA-sonnet-4-6', messages: user('hello world'), max_tokens: 3,
        }));
        assert.equal(upstream[0].json.max_tokens, 3);
        assert.equal(r.choices[0].finish_reason, 'length');
        assert.equal(r.usage.completion_tokens, 3);
    });

    test('vendorC model over chat completions (deepseek provider)', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model: 'vendorC-v4-flash', messages: user('hello world'),
        }));
        assert.equal(r.model, 'vendorC-v4-flash');
        assert.equal(r.choices[0].message.content, 'Echo: hello world');
        assert.equal(upstream[0].path, '/v1/messages');
        assert.equal(upstream[0].headers['x-api-key'], masked(UPSTREAM_KEYS.deepseek[0]));
    });
});

describe('responses API (vendorB)', () => {
    test('non-streaming', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.responses.create({
            model: 'vendorB-6-luna', input: 'hi there',
        }));
        assert.equal(r.object, 'response');
        assert.equal(r.status, 'completed');
        assert.equal(r.model, 'vendorB-6-luna');
        assert.equal(r.output_text, 'Echo: hi there');
        assert.equal(r.output[0].type, 'message');
        assert.equal(r.output[0].role, 'assistant');
        assert.equal(r.output[0].content[0].type, 'output_text');
        assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens],
            [5, 8, 13]);
        assert.equal(upstream[0].path, '/v1/responses');
        assert.equal(upstream[0].json.model, 'vendorB-6-luna');
    });

    test('streaming (create stream: true): typed events in order, completed with usage', async () => {
        const stream = await openai.responses.create({
            model: 'vendorB-6-luna', input: 'hi there', stream: true,
        });
        let text = '';
        let completed = null;
        let lastSeq = -1;
        const types = [];
        for await (const e of stream) {
            types.push(e.type);
            assert.ok(e.sequence_number > lastSeq, 'sequence numbers increase');
            lastSeq = e.sequence_number;
            if (e.type === 'response.output_text.delta') text += e.delta;
            if (e.type === 'response.completed') completed = e.response;
        }
        assert.equal(types[0], 'response.created');
        assert.equal(types[types.length - 1], 'response.completed');
        assert.equal(text, 'Echo: hi there');
        assert.equal(completed.model, 'vendorB-6-luna');
        assert.equal(completed.usage.output_tokens, 8);
        assert.equal(completed.usage.input_tokens, 5);
    });

    test('stream helper: responses.stream + finalResponse', async () => {
        const stream = openai.responses.stream({
            model: 'vendorB-5-nano', input: [{ role: 'user', content: 'stream me' }],
        });
        let deltas = '';
        stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
        const final = await stream.finalResponse();
        assert.equal(deltas, 'Echo: stream me');
        assert.equal(final.output_text, 'Echo: stream me');
        assert.equal(final.status, 'completed');
        assert.equal(final.model, 'vendorB-5-nano');
    });

    test('function call output item', async () => {
        const r = await openai.responses.create({
            model: 'vendorB-6-luna', input: 'weather in Rome?',
            tools: [{ type: 'function', name: 'get_weather', parameters: chatWeatherTool.function.parameters }],
        });
        const call = r.output.find((o) => o.type === 'function_call');
        assert.ok(call, JSON.stringify(r.output));
        assert.equal(call.name, 'get_weather');
        assert.deepEqual(JSON.parse(call.arguments), { location: 'weather in Rome?' });
    });
});

describe('gateway/* models (catalog provider)', () => {
    const model = 'gateway/openrouter/fakeai/echo-small';

    test('non-streaming: routed to the catalog provider with its upstream id', async () => {
        const { result: r, upstream } = await upstreamOf(() => openai.chat.completions.create({
            model, messages: user('hello gateway'),
        }));
        assert.equal(r.model, model);
        assert.equal(r.choices[0].message.content, 'Echo: hello gateway');
        assert.equal(r.usage.completion_tokens, 8);
        const chat = upstream.filter((u) => u.path.endsWith('/chat/completions'));
        assert.equal(chat.length, 1, JSON.stringify(upstream.map((u) => u.path)));
        assert.equal(chat[0].path, '/api/v1/chat/completions');
        assert.equal(chat[0].json.model, 'fakeai/echo-small');
        assert.equal(chat[0].headers.authorization, `Bearer ${masked(UPSTREAM_KEYS.openrouter[0])}`);
    });

    test('streaming', async () => {
        const chunks = await collect(await openai.chat.completions.create({
            model, messages: user('hello gateway'), stream: true,
            stream_options: { include_usage: true },
        }));
        assert.equal(deltaText(chunks), 'Echo: hello gateway');
        assert.ok(chunks.every((c) => c.model === model));
        assert.equal(chunks.filter((c) => c.usage).length, 1);
    });

    test('a model the live catalog does not have is refused with 400', async () => {
        const e = await openai.chat.completions.create({
            model: 'gateway/openrouter/nobody/no-such-model', messages: user('x'),
        }).then(() => null, (err) => err);
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    });
});
