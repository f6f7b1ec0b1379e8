// Drives the official SDKs straight at a running fake_upstream, to show it speaks the real
// protocols: every call below must parse without errors (or fail exactly as expected).
//
//   mkdir -p /tmp/sdkcheck && cd /tmp/sdkcheck && npm install openai@6 @anthropic-ai/sdk@0.137
//   NODE_PATH=/tmp/sdkcheck/node_modules node tests/fake_upstream/sdk_check.cjs http://127.0.0.1:PORT
//
// Exits non-zero on the first failure.
'use strict';

const assert = require('node:assert/strict');
const OpenAI = require('openai').default ?? require('openai');
const AnthropicModule = require('@anthropic-ai/sdk');
const Anthropic = AnthropicModule.default ?? AnthropicModule;

const base = process.argv[2];
if (!base) {
    console.error('usage: node sdk_check.cjs http://127.0.0.1:PORT');
    process.exit(2);
}

const openai = new OpenAI({ apiKey: 'sk-sdkcheck-0001', baseURL: `${base}/v1`, maxRetries: 0 });
const anthropic = new Anthropic({ apiKey: 'sk-ant-sdkcheck-0001', baseURL: base, maxRetries: 0 });

const weatherTool = {
    type: 'function',
    function: {
        name: 'get_weather',
        description: 'Current weather',
        parameters: {
            type: 'object',
            properties: { location: { type: 'string' } },
            required: ['location'],
        },
    },
};
const user = (content) => [{ role: 'user', content }];
let passed = 0;

async function check(name, fn) {
    try {
        await fn();
        passed += 1;
        console.log(`ok   ${name}`);
    } catch (e) {
        console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
        process.exit(1);
    }
}

async function expectThrow(fn, test) {
    let thrown = null;
    try {
        await fn();
    } catch (e) {
        thrown = e;
    }
    assert.ok(thrown, 'expected an error');
    test(thrown);
}

(async () => {
    // ------------------------------------------------------------ chat completions
    await check('chat non-stream', async () => {
        const r = await openai.chat.completions.create({ model: 'm', messages: user('hello world') });
        assert.equal(r.object, 'chat.completion');
        assert.equal(r.choices[0].message.content, 'Echo: hello world');
        assert.equal(r.choices[0].finish_reason, 'stop');
        assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens],
            [5, 8, 13]);
        assert.match(r._request_id, /^req_/);
    });
    await check('chat stream (create, include_usage)', async () => {
        const stream = await openai.chat.completions.create({
            model: 'm', messages: user('hello world'), stream: true,
            stream_options: { include_usage: true },
        });
        let text = '';
        let usage = null;
        let finish = null;
        for await (const chunk of stream) {
            if (chunk.usage) usage = chunk.usage;
            for (const c of chunk.choices) {
                text += c.delta.content ?? '';
                finish = c.finish_reason ?? finish;
            }
        }
        assert.equal(text, 'Echo: hello world');
        assert.equal(finish, 'stop');
        assert.equal(usage.completion_tokens, 8);
    });
    await check('chat stream helper finalChatCompletion', async () => {
        const stream = openai.chat.completions.stream({ model: 'm', messages: user('a b c') });
        const final = await stream.finalChatCompletion();
        assert.equal(final.choices[0].message.content, 'Echo: a b c');
    });
    await check('chat tool call non-stream', async () => {
        const r = await openai.chat.completions.create({
            model: 'm', messages: user('What is the weather in Paris?'), tools: [weatherTool],
        });
        const call = r.choices[0].message.tool_calls[0];
        assert.equal(r.choices[0].finish_reason, 'tool_calls');
        assert.equal(call.type, 'function');
        assert.equal(call.function.name, 'get_weather');
        assert.deepEqual(JSON.parse(call.function.arguments),
            { location: 'What is the weather in Paris?' });
    });
    await check('chat tool call stream helper', async () => {
        const stream = openai.chat.completions.stream({
            model: 'm', messages: user('weather?'), tools: [weatherTool],
        });
        const final = await stream.finalChatCompletion();
        const call = final.choices[0].message.tool_calls[0];
        assert.equal(final.choices[0].finish_reason, 'tool_calls');
        assert.match(call.id, /^call_/);
        assert.deepEqual(JSON.parse(call.function.arguments), { location: 'weather?' });
    });
    await check('chat tool call stream, header forced, arguments parsed by the SDK', async () => {
        const stream = openai.chat.completions.stream({
            model: 'm', messages: user('no trigger word'),
            tools: [{ ...weatherTool, function: { ...weatherTool.function, strict: true } }],
        }, { headers: { 'x-fake-tool': '1' } });
        const final = await stream.finalChatCompletion();
        const call = final.choices[0].message.tool_calls[0];
        assert.deepEqual(call.function.parsed_arguments, { location: 'no trigger word' });
    });
    await check('chat JSON mode', async () => {
        const r = await openai.chat.completions.create({
            model: 'm', messages: user('json please'), response_format: { type: 'json_object' },
        });
        assert.deepEqual(JSON.parse(r.choices[0].message.content), { echo: 'json please' });
    });
    await check('chat max_tokens truncates (finish_reason length)', async () => {
        const r = await openai.chat.completions.create({
            model: 'm', messages: user('hello world'), max_tokens: 3,
        });
        assert.equal(r.choices[0].finish_reason, 'length');
        assert.equal(r.usage.completion_tokens, 3);
    });
    await check('chat 429 error shape', async () => {
        await expectThrow(() => openai.chat.completions.create(
            { model: 'm', messages: user('x') }, { headers: { 'x-fake-fault': '429' } }), (e) => {
            assert.ok(e instanceof OpenAI.RateLimitError, String(e));
            assert.equal(e.status, 429);
            assert.equal(e.code, 'rate_limit_exceeded');
            assert.equal(e.type, 'requests');
            assert.equal(e.headers.get('retry-after'), '2');
        });
    });
    await check('chat 500 error shape', async () => {
        await expectThrow(() => openai.chat.completions.create(
            { model: 'm', messages: user('x') }, { headers: { 'x-fake-fault': '500' } }), (e) => {
            assert.ok(e instanceof OpenAI.InternalServerError, String(e));
            assert.equal(e.type, 'server_error');
        });
    });
    await check('chat malformed stream throws', async () => {
        await expectThrow(async () => {
            const s = await openai.chat.completions.create({
                model: 'm', messages: user('x'), stream: true,
            }, { headers: { 'x-fake-fault': 'malformed-json' } });
            for await (const _ of s) { /* drain */ }
        }, (e) => assert.ok(e instanceof SyntaxError, String(e)));
    });
    await check('chat reset mid-stream throws', async () => {
        const seen = [];
        await expectThrow(async () => {
            const s = await openai.chat.completions.create({
                model: 'm', messages: user('hello world'), stream: true,
            }, { headers: { 'x-fake-fault': 'reset-mid-stream:2' } });
            for await (const c of s) seen.push(c);
        }, () => {});
        assert.equal(seen.length, 3); // role chunk and two pieces
    });
    await check('chat error mid-stream surfaces as APIError', async () => {
        await expectThrow(async () => {
            const s = await openai.chat.completions.create({
                model: 'm', messages: user('x'), stream: true,
            }, { headers: { 'x-fake-fault': 'error-mid-stream' } });
            for await (const _ of s) { /* drain */ }
        }, (e) => assert.ok(e instanceof OpenAI.APIError, String(e)));
    });
    await check('models list', async () => {
        const ids = [];
        for await (const m of openai.models.list()) ids.push(m.id);
        assert.ok(ids.includes('echo-small'), ids.join(','));
    });

    // ------------------------------------------------------------ responses
    await check('responses non-stream', async () => {
        const r = await openai.responses.create({ model: 'm', input: 'hi there' });
        assert.equal(r.status, 'completed');
        assert.equal(r.output_text, 'Echo: hi there');
        assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens],
            [5, 8, 13]);
    });
    await check('responses stream (create)', async () => {
        const s = await openai.responses.create({ model: 'm', input: 'hi there', stream: true });
        let text = '';
        let completed = null;
        let seq = -1;
        for await (const e of s) {
            assert.equal(e.sequence_number, seq + 1);
            seq = e.sequence_number;
            if (e.type === 'response.output_text.delta') text += e.delta;
            if (e.type === 'response.completed') completed = e.response;
        }
        assert.equal(text, 'Echo: hi there');
        assert.equal(completed.usage.output_tokens, 8);
    });
    await check('responses stream helper finalResponse', async () => {
        const s = openai.responses.stream({
            model: 'm', instructions: 'be brief',
            input: [{ role: 'user', content: [{ type: 'input_text', text: 'one two' }] }],
        });
        const final = await s.finalResponse();
        assert.equal(final.output_text, 'Echo: one two');
        assert.equal(final.usage.input_tokens, 3 + 2 + 3 + 2);
    });
    await check('responses function call (stream helper)', async () => {
        const s = openai.responses.stream({
            model: 'm', input: 'weather in Oslo',
            tools: [{ type: 'function', name: 'get_weather', parameters: weatherTool.function.parameters, strict: false }],
        });
        const final = await s.finalResponse();
        const call = final.output[0];
        assert.equal(call.type, 'function_call');
        assert.equal(call.name, 'get_weather');
        assert.deepEqual(JSON.parse(call.arguments), { location: 'weather in Oslo' });
    });
    await check('responses function call non-stream', async () => {
        const r = await openai.responses.create({
            model: 'm', input: 'weather in Oslo',
            tools: [{ type: 'function', name: 'get_weather', parameters: weatherTool.function.parameters, strict: false }],
        });
        assert.equal(r.output[0].type, 'function_call');
        assert.match(r.output[0].call_id, /^call_/);
    });
    await check('responses max_output_tokens (incomplete)', async () => {
        const s = openai.responses.stream({ model: 'm', input: 'hello world', max_output_tokens: 2 });
        let incomplete = null;
        s.on('response.incomplete', (e) => { incomplete = e.response; });
        await s.done().catch(() => {});
        assert.equal(incomplete.status, 'incomplete');
        assert.equal(incomplete.usage.output_tokens, 2);
    });

    // ------------------------------------------------------------ messages
    await check('messages non-stream', async () => {
        const m = await anthropic.messages.create({
            model: 'm', max_tokens: 100, messages: user('hello world'),
        });
        assert.equal(m.type, 'message');
        assert.equal(m.content[0].text, 'Echo: hello world');
        assert.equal(m.stop_reason, 'end_turn');
        assert.equal(m.usage.input_tokens, 5);
        assert.equal(m.usage.output_tokens, 8);
        assert.match(m._request_id, /^req_/);
    });
    await check('messages stream (create)', async () => {
        const s = await anthropic.messages.create({
            model: 'm', max_tokens: 100, messages: user('hello world'), stream: true,
        });
        const types = [];
        let text = '';
        for await (const e of s) {
            types.push(e.type);
            if (e.type === 'content_block_delta') text += e.delta.text;
        }
        assert.equal(text, 'Echo: hello world');
        assert.equal(types[0], 'message_start');
        assert.equal(types.at(-1), 'message_stop');
    });
    await check('messages stream helper finalMessage with cache usage', async () => {
        const s = anthropic.messages.stream({
            model: 'm', max_tokens: 100, system: 'be brief', messages: user('hello world'),
        }, { headers: { 'x-fake-cache-read': '100', 'x-fake-cache-write': '20' } });
        const final = await s.finalMessage();
        assert.equal(final.content[0].text, 'Echo: hello world');
        assert.deepEqual(final.usage, {
            input_tokens: 10, cache_creation_input_tokens: 20, cache_read_input_tokens: 100,
            output_tokens: 8,
        });
    });
    const anthropicTool = {
        name: 'get_weather', description: 'Current weather',
        input_schema: weatherTool.function.parameters,
    };
    await check('messages tool_use non-stream', async () => {
        const m = await anthropic.messages.create({
            model: 'm', max_tokens: 100, tools: [anthropicTool], messages: user('weather in Rome?'),
        });
        assert.equal(m.stop_reason, 'tool_use');
        assert.equal(m.content[0].type, 'tool_use');
        assert.match(m.content[0].id, /^toolu_/);
        assert.deepEqual(m.content[0].input, { location: 'weather in Rome?' });
    });
    await check('messages tool_use stream helper', async () => {
        const s = anthropic.messages.stream({
            model: 'm', max_tokens: 100, tools: [anthropicTool], messages: user('weather in Rome?'),
        });
        const final = await s.finalMessage();
        assert.equal(final.stop_reason, 'tool_use');
        assert.deepEqual(final.content[0].input, { location: 'weather in Rome?' });
    });
    await check('messages tool result answers with text', async () => {
        const m = await anthropic.messages.create({
            model: 'm', max_tokens: 100, tools: [anthropicTool],
            messages: [
                { role: 'user', content: 'weather in Rome?' },
                { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Rome' } }] },
                { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
            ],
        });
        assert.equal(m.stop_reason, 'end_turn');
        assert.equal(m.content[0].text, 'Echo: weather in Rome?');
    });
    await check('messages max_tokens stop reason', async () => {
        const m = await anthropic.messages.create({ model: 'm', max_tokens: 2, messages: user('hi') });
        assert.equal(m.stop_reason, 'max_tokens');
        assert.equal(m.usage.output_tokens, 2);
    });
    await check('messages 429 / 529 error shapes', async () => {
        await expectThrow(() => anthropic.messages.create(
            { model: 'm', max_tokens: 10, messages: user('x') },
            { headers: { 'x-fake-fault': '429' } }), (e) => {
            assert.ok(e instanceof Anthropic.RateLimitError, String(e));
            assert.equal(e.error.type, 'error');
            assert.equal(e.error.error.type, 'rate_limit_error');
            assert.match(e.requestID, /^req_/);
        });
        await expectThrow(() => anthropic.messages.create(
            { model: 'm', max_tokens: 10, messages: user('x') },
            { headers: { 'x-fake-fault': '529' } }), (e) => {
            assert.equal(e.status, 529);
            assert.equal(e.error.error.type, 'overloaded_error');
        });
    });
    await check('messages error event mid-stream', async () => {
        await expectThrow(async () => {
            const s = anthropic.messages.stream({ model: 'm', max_tokens: 10, messages: user('x') },
                { headers: { 'x-fake-fault': 'error-mid-stream' } });
            await s.finalMessage();
        }, (e) => assert.match(String(e), /overloaded_error/));
    });
    await check('messages without anthropic-version is a 400', async () => {
        const r = await fetch(`${base}/v1/messages`, {
            method: 'POST', headers: { 'x-api-key': 'k', 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'm', max_tokens: 1, messages: user('x') }),
        });
        assert.equal(r.status, 400);
        const body = await r.json();
        assert.equal(body.error.type, 'invalid_request_error');
    });
    await check('anthropic models list', async () => {
        const ids = [];
        for await (const m of anthropic.models.list()) ids.push(m.id);
        assert.ok(ids.includes('claude-fake'), ids.join(','));
    });
    await check('openrouter catalog', async () => {
        const r = await fetch(`${base}/api/v1/models`);
        const body = await r.json();
        const m = body.data.find((x) => x.id === 'anthropic/claude-fake');
        assert.equal(m.pricing.prompt, '0.000003');
        assert.equal(m.pricing.completion, '0.000015');
        assert.equal(typeof m.context_length, 'number');
    });

    console.log(`${passed} checks passed`);
})();
