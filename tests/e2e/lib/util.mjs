// Small helpers shared by the end-to-end tests.
import assert from 'node:assert/strict';

export const UNITS_PER_CREDIT = 1_000_000_000n;

// A non-negative decimal string scaled by 10^decimals, exactly, as a BigInt ("0.4", 9 ->
// 400000000n). Refuses more decimals than that: a price must be exact.
export function parseScaled(text, decimals) {
    assert.match(text, /^\d+(\.\d+)?$/, `not a plain decimal: ${text}`);
    const [whole, frac = ''] = text.split('.');
    assert.ok(frac.replace(/0+$/, '').length <= decimals,
        `${text} has more than ${decimals} significant decimals`);
    return BigInt(whole) * 10n ** BigInt(decimals) +
        BigInt((frac + '0'.repeat(decimals)).slice(0, decimals) || '0');
}

// /v1/models prices are credits per 1M tokens with 9 decimals -> units (1e-9 credit) per 1M.
export const unitsPerMillion = (credits) => parseScaled(credits, 9);

// An OpenRouter-style per-token price (credits per token) -> units per 1M tokens (1e9 * 1e6).
export const perTokenToUnitsPerMillion = (perToken) => parseScaled(perToken, 15);

// cost = ceil(sum(tokens x units per 1M) / 1M), one rounding per request (models/Money.h).
export function expectedCost(tokens, price) {
    const sum = BigInt(tokens.input ?? 0) * price.input +
        BigInt(tokens.output ?? 0) * price.output +
        BigInt(tokens.cacheRead ?? 0) * price.cacheRead +
        BigInt(tokens.cacheWrite ?? 0) * price.cacheWrite;
    return (sum + 999_999n) / 1_000_000n;
}

// The price of a /v1/models entry, in units per 1M tokens.
export function priceOf(model) {
    assert.ok(model?.pricing, `model has no pricing: ${JSON.stringify(model)}`);
    const p = model.pricing;
    return {
        input: unitsPerMillion(p.input ?? '0'),
        output: unitsPerMillion(p.output ?? '0'),
        cacheRead: unitsPerMillion(p.cache_read ?? '0'),
        cacheWrite: unitsPerMillion(p.cache_write ?? '0'),
    };
}

// Runs fn, which must throw; returns the error.
export async function rejects(fn, message = 'expected an error') {
    try {
        await fn();
    } catch (e) {
        return e;
    }
    assert.fail(message);
}

// Reads a whole SSE response: [{event, data}] in order, data as the raw string.
export async function readSse(response) {
    const text = await response.text();
    const events = [];
    for (const block of text.split(/\r?\n\r?\n/)) {
        if (!block.trim()) continue;
        let event = null;
        const data = [];
        for (const line of block.split(/\r?\n/)) {
            if (line.startsWith(':')) continue;
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            let value = i < 0 ? '' : line.slice(i + 1);
            if (value.startsWith(' ')) value = value.slice(1);
            if (field === 'event') event = value;
            else if (field === 'data') data.push(value);
        }
        if (event !== null || data.length) events.push({ event, data: data.join('\n') });
    }
    return events;
}

// The fake's prompt-token rule: 3 per message plus its words (tests/fake_upstream/README.md).
export function fakePromptTokens(...messages) {
    return messages.reduce((n, text) => n + 3 + text.split(/\s+/).filter(Boolean).length, 0);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The weather tool in both protocols' shapes.
export const chatWeatherTool = {
    type: 'function',
    function: {
        name: 'get_weather',
        description: 'Current weather for a place',
        parameters: {
            type: 'object',
            properties: { location: { type: 'string' } },
            required: ['location'],
        },
    },
};

export const messagesWeatherTool = {
    name: 'get_weather',
    description: 'Current weather for a place',
    input_schema: {
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
    },
};

export const user = (content) => [{ role: 'user', content }];
