// Social-media data through the real switchyard-server, the fake upstream serving the shared
// TikHub catalog (--social-openapi): /openapi.json validated by a real OpenAPI validator
// (@apidevtools/swagger-parser), an action called the way its document describes it with the
// query kept byte for byte and billed once, the section 7 errors as exact bodies, and the
// extract endpoint's standardized answer (and its 400 listing the supported hosts).
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Stack } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CATALOG = path.resolve(here, '../../../shared/data/social/openapi-upstream.json');
const PRICE = 10_000_000n; // USD 0.01 in units

let stack;

before(async () => {
    stack = await Stack.start({
        scopes: 'credits:read,usage:read,social:read,social:write',
        fakeArgs: ['--social-openapi', CATALOG],
        sections: (fakeUrl) => ({
            social: {
                providers: { tikhub: { base_url: fakeUrl, keys: ['th-e2e-upstream-key'],
                    timeouts: { first_byte_ms: 3000 } } },
                platforms: { twitter: { name: 'x' }, reddit: { enabled: false } },
                catalog: { refresh_hours: 0 },
            },
        }),
    });
    for (let i = 0; i < 100; i++) {
        if ((await stack.control('/api/v1/social/catalog')).source === 'upstream') return;
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the catalog was not fetched');
});

after(async () => {
    await stack?.stop();
});

const get = (target, key = stack.apiKey) =>
    fetch(`${stack.url}${target}`, { headers: { 'X-API-Key': key } });

describe('social-media data', () => {
    test('/openapi.json is a valid OpenAPI 3.1 document of the enabled actions', async () => {
        const r = await fetch(`${stack.url}/openapi.json`);
        assert.equal(r.status, 200);
        const doc = await r.json();
        assert.match(doc.openapi, /^3\.1\./);
        assert.equal(doc.servers[0].url, stack.url);
        const paths = Object.keys(doc.paths);
        assert.ok(paths.length > 900, `${paths.length} paths`);
        assert.ok(paths.every((p) => p.startsWith('/v1/social-media/data/')));
        assert.ok(!paths.some((p) => p.startsWith('/v1/social-media/data/reddit/')));
        assert.ok(paths.includes('/v1/social-media/data/x/web/fetch_tweet_detail'));
        // The validator dereferences and checks against the OpenAPI 3.1 schema; it throws on
        // any error.
        await SwaggerParser.validate(structuredClone(doc));
    });

    test('an action as its document describes it: query kept, billed once', async () => {
        const doc = await (await fetch(`${stack.url}/openapi.json`)).json();
        const op = doc.paths['/v1/social-media/data/douyin/app/v3/fetch_one_video'].get;
        const required = op.parameters.filter((p) => p.required).map((p) => p.name);
        assert.deepEqual(required, ['aweme_id']);
        const before = await stack.settledBalance();
        const query = 'aweme_id=73%2F1&tag=a&tag=b&q=%E4%B8%AD+x';
        const r = await get(`/v1/social-media/data/douyin/app/v3/fetch_one_video?${query}`);
        assert.equal(r.status, 200);
        const text = await r.text();
        assert.ok(text.startsWith('{"code":200'), text.slice(0, 40));
        const echo = JSON.parse(text).data.echo;
        assert.equal(echo.query, query);
        assert.equal(echo.authorization, 'Bearer th-e2e-upstream-key');
        assert.ok(!text.includes(stack.apiKey));
        assert.equal(before - await stack.settledBalance(), PRICE);
    });

    test('video extract: one standardized answer, billed once', async () => {
        const before = await stack.settledBalance();
        const url = 'https://www.tiktok.com/@someone/video/7350810998023949599';
        const r = await get(`/v1/social-media/video/extract?url=${encodeURIComponent(url)}`);
        assert.equal(r.status, 200);
        const v = await r.json();
        assert.equal(v.platform, 'tiktok');
        assert.equal(v.videoId, '7350810998023949599');
        for (const k of ['title', 'author', 'authorId', 'coverUrl', 'duration', 'videos', 'audios']) {
            assert.ok(k in v, k);
        }
        assert.ok(v.videos.length > 0);
        for (const k of ['url', 'quality', 'format', 'width', 'height', 'size']) {
            assert.ok(k in v.videos[0], k);
        }
        assert.equal(before - await stack.settledBalance(), PRICE);

        const bad = await get(`/v1/social-media/video/extract?url=${encodeURIComponent('https://example.com/v/1')}`);
        assert.equal(bad.status, 400);
        const error = (await bad.json()).error;
        assert.equal(error.type, 'invalid_request_error');
        assert.match(error.message, /youtube\.com.*douyin\.com/s);
        assert.equal(before - await stack.settledBalance(), PRICE);
    });

    test('section 7 errors, exact and unbilled', async () => {
        const before = await stack.settledBalance();
        const cases = [
            ['/v1/social-media/data/douyin/app/v3/nope', 400,
                { error: { message: 'Invalid path', type: 'invalid_request_error' } }],
            ['/v1/social-media/data/reddit/app/fetch_home_feed', 403,
                { error: { message: 'Platform "reddit" is not available',
                    type: 'invalid_request_error' } }],
            ['/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1&x-fake-fault=hang', 504,
                { error: { message: 'Upstream request timed out', type: 'server_error' } }],
            ['/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1&x-fake-fault=reset', 503,
                { error: { message: 'Failed to reach upstream service', type: 'server_error' } }],
        ];
        for (const [target, status, body] of cases) {
            const r = await get(target);
            assert.equal(r.status, status, target);
            assert.deepEqual(await r.json(), body, target);
        }
        assert.equal(await stack.settledBalance(), before);
    });
});
