// The openai@6 SDK's images.generate against the real switchyard-server, the fake upstream as an
// OpenAI-compatible images provider: real PNGs by link and as base64, links that work and that
// stop working when altered, a partial task, upstream failures as the SDK's typed errors,
// a callbackUrl the guard refuses, the task through GET, and billing exact for each.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { Stack } from './lib/harness.mjs';
import { rejects } from './lib/util.mjs';

const PRICE = 10_000_000n; // 0.01 credits per image, in units
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let stack;
let openai;

const pngSize = (buf) => ({ png: buf.subarray(0, 8).equals(PNG), width: buf.readUInt32BE(16),
    height: buf.readUInt32BE(20) });

before(async () => {
    stack = await Stack.start({
        scopes: 'credits:read,usage:read,webhooks:read',
        sections: (fakeUrl) => ({
            images: {
                providers: {
                    fake: { type: 'openai', base_url: `${fakeUrl}/v1`, keys: ['sk-e2e-images-upstream'],
                        timeouts: { total_ms: 20000 } },
                },
                models: [{ id: 'e2e-image', provider: 'fake', upstream_model: 'fake-image-1',
                    price_per_image: '0.01' }],
                default_model: 'e2e-image',
            },
        }),
    });
    openai = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0,
        timeout: 60_000 });
});

after(async () => {
    await stack?.stop();
});

describe('images.generate', () => {
    test('url: real PNGs behind signed links, billed per image', async () => {
        const before = await stack.settledBalance();
        const res = await openai.images.generate({ model: 'e2e-image', prompt: 'a lighthouse at dusk',
            n: 2, size: '256x256' });
        assert.equal(res.data.length, 2);
        assert.ok(res.created > 0);
        for (const item of res.data) {
            assert.match(item.url, /\/v1\/images\/files\/img_[a-z2-7]+\.png\?expires=\d+&signature=/);
            const img = await fetch(item.url); // no key: the link is the credential
            assert.equal(img.status, 200);
            assert.equal(img.headers.get('content-type'), 'image/png');
            assert.deepEqual(pngSize(Buffer.from(await img.arrayBuffer())),
                { png: true, width: 256, height: 256 });
        }
        assert.equal(before - await stack.settledBalance(), 2n * PRICE);
        // An altered signature is refused.
        const bad = res.data[0].url.replace(/signature=(.)/, (m, c) => `signature=${c === 'A' ? 'B' : 'A'}`);
        assert.equal((await fetch(bad)).status, 403);
        // The task behind the answer, through GET.
        const task = await (await fetch(`${stack.url}/v1/images/generations/${res.id}`,
            { headers: { Authorization: `Bearer ${stack.apiKey}` } })).json();
        assert.equal(task.status, 'completed');
        assert.equal(task.images.length, 2);
    });

    test('b64_json: the images inline', async () => {
        const res = await openai.images.generate({ prompt: 'two kites', response_format: 'b64_json',
            size: '512x512' });
        assert.equal(res.data.length, 1);
        assert.deepEqual(pngSize(Buffer.from(res.data[0].b64_json, 'base64')),
            { png: true, width: 512, height: 512 });
    });

    test('partial: the images that were made, and only those billed', async () => {
        const before = await stack.settledBalance();
        const res = await openai.images.generate({ prompt: 'three boats [fake images=1]', n: 3 });
        assert.equal(res.data.length, 1);
        assert.equal(res.status, 'partial');
        assert.equal(before - await stack.settledBalance(), PRICE);
    });

    test('upstream failures: typed errors, nothing billed', async () => {
        const before = await stack.settledBalance();
        const limited = await rejects(() => openai.images.generate({ prompt: 'x [fake fault=429]' }));
        assert.ok(limited instanceof OpenAI.RateLimitError, String(limited));
        const failed = await rejects(() => openai.images.generate({ prompt: 'x [fake fault=500]' }));
        assert.ok(failed instanceof OpenAI.InternalServerError, String(failed));
        assert.equal(failed.status, 502);
        assert.equal(await stack.settledBalance(), before);
    });

    test('validation and the callback guard: 400 naming the field', async () => {
        const n = await rejects(() => openai.images.generate({ prompt: 'x', n: 11 }));
        assert.ok(n instanceof OpenAI.BadRequestError);
        assert.equal(n.param, 'n');
        const cb = await rejects(() => openai.images.generate({ prompt: 'x',
            callbackUrl: 'https://169.254.169.254/latest/meta-data' }));
        assert.ok(cb instanceof OpenAI.BadRequestError);
        assert.equal(cb.param, 'callbackUrl');
        const model = await rejects(() => openai.images.generate({ model: 'nope', prompt: 'x' }));
        assert.equal(model.param, 'model');
    });

    test('the image models in /v1/models', async () => {
        const m = (await stack.models()).find((x) => x.id === 'e2e-image');
        assert.deepEqual(m.endpoints, ['images.generations']);
        assert.equal(m.pricing.per_image, '0.010000000');
    });
});
