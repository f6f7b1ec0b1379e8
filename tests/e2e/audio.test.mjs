// The openai@6 SDK's audio calls against the real switchyard-server on its local engines:
// speech in both formats, transcription in every response format, an upload of each container
// the contract lists (made from the server's own speech with the ffmpeg program), file_uri
// through the outbound URL guard (loopback allowed by the explicit test setting), approximate
// voice cloning, and the errors as the SDK's typed errors, with nothing charged for them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { Stack } from './lib/harness.mjs';
import { rejects } from './lib/util.mjs';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';
const UNITS_PER_CHARACTER = 5000n; // 0.005 credits per 1,000 characters

let stack;
let openai;
let work;
let speechWav; // the server's own speech of SENTENCE, 48 kHz stereo WAV
let fileServer;
let fileServerUrl;

// Word error rate, lower-cased, punctuation dropped.
function wer(ref, hyp) {
    const words = (t) => t.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
    const r = words(ref);
    const h = words(hyp);
    let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
    for (let i = 1; i <= r.length; i++) {
        const cur = [i];
        for (let j = 1; j <= h.length; j++)
            cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r[i - 1] === h[j - 1] ? 0 : 1));
        prev = cur;
    }
    return prev[h.length] / r.length;
}

function ffmpeg(args) {
    const r = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args],
        { encoding: 'utf8', timeout: 60_000 });
    if (r.error || r.status !== 0)
        throw new Error(`ffmpeg ${args.join(' ')}: ${r.error?.message ?? r.stderr} (the ffmpeg ` +
            'program comes from installer/build-deps.sh --tests)');
}

const wavInfo = (buf) => ({
    riff: buf.subarray(0, 4).toString('latin1'),
    wave: buf.subarray(8, 12).toString('latin1'),
    channels: buf.readUInt16LE(22),
    rate: buf.readUInt32LE(24),
    bits: buf.readUInt16LE(34),
});

before(async () => {
    stack = await Stack.start({
        sections: {
            audio: {
                file_uri: { fetch: { allow_http: true, allow_cidrs: ['127.0.0.0/8'] } },
            },
        },
    });
    openai = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.url}/v1`, maxRetries: 0,
        timeout: 60_000 });
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-e2e-audio-'));
    const res = await openai.audio.speech.create({
        model: 'vendorE-tts-nano', voice: 'alloy', input: SENTENCE, response_format: 'wav',
    });
    speechWav = Buffer.from(await res.arrayBuffer());
    fs.writeFileSync(path.join(work, 'speech.wav'), speechWav);
    // A plain file server on loopback for file_uri.
    fileServer = http.createServer((req, resp) => {
        const file = path.join(work, path.basename(req.url));
        if (!fs.existsSync(file)) {
            resp.writeHead(404).end('no such file');
            return;
        }
        resp.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        fs.createReadStream(file).pipe(resp);
    });
    await new Promise((resolve) => fileServer.listen(0, '127.0.0.1', resolve));
    fileServerUrl = `http://127.0.0.1:${fileServer.address().port}`;
});

after(async () => {
    await new Promise((resolve) => (fileServer ? fileServer.close(resolve) : resolve()));
    await stack?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('speech', () => {
    test('wav: RIFF 48 kHz 16-bit stereo, streamed, billed per character', async () => {
        const before = await stack.settledBalance();
        const input = 'Switchyard speaks. Every sentence is streamed as it is made.';
        const res = await openai.audio.speech.create({ model: 'vendorE-tts-nano', voice: 'en-news', input });
        assert.equal(res.headers.get('content-type'), 'audio/wav');
        assert.equal(res.headers.get('x-audio-format'), 's16le; rate=48000; channels=2');
        const buf = Buffer.from(await res.arrayBuffer());
        assert.deepEqual(wavInfo(buf), { riff: 'RIFF', wave: 'WAVE', channels: 2, rate: 48000, bits: 16 });
        assert.ok(buf.length - 44 > 48000 * 4, 'more than a second of audio');
        assert.equal(before - await stack.settledBalance(), BigInt(input.length) * UNITS_PER_CHARACTER);
    });

    test('pcm: raw samples, application/octet-stream', async () => {
        const res = await openai.audio.speech.create({
            model: 'vendorE-tts-nano', voice: 'nova', input: '你好，世界。', response_format: 'pcm',
        });
        assert.equal(res.headers.get('content-type'), 'application/octet-stream');
        const buf = Buffer.from(await res.arrayBuffer());
        assert.notEqual(buf.subarray(0, 4).toString('latin1'), 'RIFF');
        assert.equal(buf.length % 4, 0);
        assert.ok(buf.length > 48000 * 4 / 2);
    });

    test('voice cloning without an upstream: local pitch and rate, said in a header', async () => {
        const form = new FormData();
        form.append('model', 'vendorE-tts-nano');
        form.append('input', 'This voice follows the reference recording.');
        form.append('voice', 'alloy');
        form.append('prompt_audio', new Blob([speechWav], { type: 'audio/wav' }), 'reference.wav');
        const r = await fetch(`${stack.url}/v1/audio/speech`,
            { method: 'POST', headers: { Authorization: `Bearer ${stack.apiKey}` }, body: form });
        assert.equal(r.status, 200, await r.clone().text());
        assert.equal(r.headers.get('x-voice-clone'), 'approximate');
        const buf = Buffer.from(await r.arrayBuffer());
        assert.equal(wavInfo(buf).rate, 48000);
    });

    test('errors are the SDK\'s typed errors, and nothing is charged', async () => {
        const before = await stack.settledBalance();
        const unknown = await rejects(() => openai.audio.speech.create({
            model: 'vendorE-tts-nano', voice: 'nobody', input: 'hi' }));
        assert.ok(unknown instanceof OpenAI.BadRequestError);
        assert.equal(unknown.param, 'voice');
        assert.match(unknown.message, /\/v1\/audio\/voices/);
        const format = await rejects(() => openai.audio.speech.create({
            model: 'vendorE-tts-nano', voice: 'alloy', input: 'hi', response_format: 'mp3' }));
        assert.ok(format instanceof OpenAI.BadRequestError);
        assert.match(format.message, /wav.*pcm/);
        const long = await rejects(() => openai.audio.speech.create({
            model: 'vendorE-tts-nano', voice: 'alloy', input: 'a'.repeat(4097) }));
        assert.ok(long instanceof OpenAI.BadRequestError);
        assert.equal(long.param, 'input');
        const speed = await rejects(() => openai.audio.speech.create({
            model: 'vendorE-tts-nano', voice: 'alloy', input: 'hi', speed: 5 }));
        assert.equal(speed.param, 'speed');
        const shortRef = new FormData();
        shortRef.append('input', 'hi');
        shortRef.append('prompt_audio', new Blob([speechWav.subarray(0, 44 + 48000 * 4 / 4)]), 'r.wav');
        const r = await fetch(`${stack.url}/v1/audio/speech`,
            { method: 'POST', headers: { Authorization: `Bearer ${stack.apiKey}` }, body: shortRef });
        assert.equal(r.status, 400);
        assert.equal((await r.json()).error.param, 'prompt_audio');
        assert.equal(await stack.settledBalance(), before);
    });
});

describe('transcription', () => {
    test('json, text, srt, vtt and verbose_json with words', async () => {
        const file = () => toFile(speechWav, 'speech.wav', { type: 'audio/wav' });
        const json = await openai.audio.transcriptions.create({ model: 'rapid', file: await file() });
        assert.ok(wer(SENTENCE, json.text) <= 0.34, json.text);

        const text = await openai.audio.transcriptions.create({
            model: 'rapid', file: await file(), response_format: 'text' });
        assert.equal(typeof text, 'string');
        assert.ok(wer(SENTENCE, text) <= 0.34, text);

        const srt = await openai.audio.transcriptions.create({
            model: 'rapid', file: await file(), response_format: 'srt' });
        assert.match(srt, /^1\n\d{2}:\d{2}:\d{2},\d{3} --> \d{2}:\d{2}:\d{2},\d{3}\n.+\n\n/);

        const vtt = await openai.audio.transcriptions.create({
            model: 'rapid', file: await file(), response_format: 'vtt' });
        assert.match(vtt, /^WEBVTT\n\n\d{2}:\d{2}:\d{2}\.\d{3} --> \d{2}:\d{2}:\d{2}\.\d{3}\n/);

        const verbose = await openai.audio.transcriptions.create({
            model: 'rapid', file: await file(), response_format: 'verbose_json',
            timestamp_granularities: ['word', 'segment'] });
        assert.equal(verbose.task, 'transcribe');
        assert.equal(verbose.language, 'english');
        assert.ok(Math.abs(verbose.duration - (speechWav.length - 44) / 4 / 48000) < 0.01);
        assert.ok(verbose.segments.length >= 1);
        for (const s of verbose.segments) {
            assert.ok(s.end > s.start);
            for (const k of ['id', 'seek', 'tokens', 'temperature', 'avg_logprob',
                'compression_ratio', 'no_speech_prob'])
                assert.ok(k in s, k);
        }
        assert.ok(verbose.words.length >= 6);
        assert.ok(verbose.words.every((w) => w.end >= w.start && typeof w.word === 'string'));
    });

    const containers = [
        ['mp3', ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3']],
        ['mp4', ['-c:a', 'aac', '-b:a', '64k', '-f', 'mp4']],
        ['m4a', ['-c:a', 'aac', '-b:a', '64k', '-f', 'ipod']],
        ['mpeg', ['-c:a', 'mp2', '-b:a', '128k', '-f', 'mpeg']],
        ['mpga', ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3']],
        ['wav', ['-c:a', 'pcm_s16le', '-ar', '16000', '-ac', '1', '-f', 'wav']],
        ['webm', ['-c:a', 'libopus', '-b:a', '48k', '-f', 'webm']],
        ['opus', ['-c:a', 'libopus', '-b:a', '48k', '-f', 'ogg']],
        ['flac', ['-c:a', 'flac', '-f', 'flac']],
        ['ogg', ['-c:a', 'libvorbis', '-q:a', '4', '-f', 'ogg']],
    ];
    for (const [ext, args] of containers) {
        test(`an upload in ${ext}`, async () => {
            const out = path.join(work, `upload.${ext}`);
            ffmpeg(['-i', path.join(work, 'speech.wav'), ...args, out]);
            const r = await openai.audio.transcriptions.create({
                model: 'rapid', file: await toFile(fs.readFileSync(out), `speech.${ext}`) });
            assert.ok(wer(SENTENCE, r.text) <= 0.45, `${ext}: ${r.text}`);
        });
    }

    test('file_uri: fetched by the server through the guard', async () => {
        const r = await openai.audio.transcriptions.create({
            model: 'rapid', file_uri: `${fileServerUrl}/speech.wav` });
        assert.ok(wer(SENTENCE, r.text) <= 0.34, r.text);
        const missing = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file_uri: `${fileServerUrl}/nothing.wav` }));
        assert.ok(missing instanceof OpenAI.BadRequestError);
        assert.equal(missing.param, 'file_uri');
        const metadata = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file_uri: 'http://169.254.169.254/latest/meta-data/' }));
        assert.ok(metadata instanceof OpenAI.BadRequestError);
        assert.equal(metadata.param, 'file_uri');
    });

    test('errors are the SDK\'s typed errors, and nothing is charged', async () => {
        const before = await stack.settledBalance();
        const garbage = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(Buffer.alloc(4000, 7), 'noise.mp3') }));
        assert.ok(garbage instanceof OpenAI.BadRequestError);
        assert.equal(garbage.param, 'file');
        assert.match(garbage.message, /mp3.*webm/);
        const empty = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(Buffer.alloc(0), 'empty.wav') }));
        assert.ok(empty instanceof OpenAI.BadRequestError);
        const tiny = Buffer.concat([speechWav.subarray(0, 44), Buffer.alloc(48000 * 4 / 20)]);
        tiny.writeUInt32LE(tiny.length - 8, 4);
        tiny.writeUInt32LE(tiny.length - 44, 40);
        const short = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(tiny, 'short.wav') }));
        assert.ok(short instanceof OpenAI.BadRequestError);
        assert.equal(short.code, 'audio_too_short');
        const language = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(speechWav, 'a.wav'), language: 'fr' }));
        assert.ok(language instanceof OpenAI.BadRequestError);
        assert.equal(language.param, 'language');
        const stream = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(speechWav, 'a.wav'), stream: true }));
        assert.ok(stream instanceof OpenAI.BadRequestError);
        const upstream = await rejects(async () => openai.audio.transcriptions.create({
            model: 'vendorB-asr-1', file: await toFile(speechWav, 'a.wav') }));
        assert.ok(upstream instanceof OpenAI.InternalServerError);
        assert.equal(upstream.status, 503);
        assert.match(upstream.message, /audio\.providers\.openai\.keys/);
        const big = await rejects(async () => openai.audio.transcriptions.create({
            model: 'rapid', file: await toFile(Buffer.alloc(26_214_401), 'big.wav') }));
        assert.equal(big.status, 413);
        assert.match(big.message, /26214400/);
        assert.equal(await stack.settledBalance(), before);
    });

    test('no credits: 402 before any decoding', async () => {
        const poor = await Stack.start({ credits: null });
        try {
            const client = new OpenAI({ apiKey: poor.apiKey, baseURL: `${poor.url}/v1`, maxRetries: 0 });
            const e = await rejects(async () => client.audio.transcriptions.create({
                model: 'rapid', file: await toFile(speechWav, 'a.wav') }));
            assert.equal(e.status, 402);
            const s = await rejects(() => client.audio.speech.create({
                model: 'vendorE-tts-nano', voice: 'alloy', input: 'hi' }));
            assert.equal(s.status, 402);
        } finally {
            await poor.stop();
        }
    });
});

describe('upstream providers (the fake as OpenAI and as fish-speech)', () => {
    let up;
    let client;
    before(async () => {
        up = await Stack.start({
            sections: (fakeUrl) => ({
                audio: {
                    providers: {
                        openai: { base_url: `${fakeUrl}/v1`, keys: ['up-key-audio-00a1'] },
                        fish: { type: 'fish-speech', base_url: fakeUrl },
                    },
                    models: [{ id: 'vendorB-tts-1', task: 'speech', provider: 'openai',
                        upstream_model: 'tts-1' }],
                    clone_provider: 'fish',
                },
            }),
        });
        client = new OpenAI({ apiKey: up.apiKey, baseURL: `${up.url}/v1`, maxRetries: 0,
            timeout: 60_000 });
    });
    after(async () => {
        await up?.stop();
    });

    test('vendorB-asr-1: every format through the upstream, prompt and language forwarded', async () => {
        const file = () => toFile(speechWav, 'speech.wav', { type: 'audio/wav' });
        const json = await client.audio.transcriptions.create({
            model: 'vendorB-asr-1', file: await file(), language: 'fr', prompt: 'a hint' });
        assert.match(json.text, /Language: fr/);
        assert.match(json.text, /Prompt: a hint/);
        for (const format of ['text', 'srt', 'vtt']) {
            const out = await client.audio.transcriptions.create({
                model: 'vendorB-asr-1', file: await file(), response_format: format });
            assert.equal(typeof out, 'string');
            assert.ok(out.length > 10, format);
        }
        const verbose = await client.audio.transcriptions.create({
            model: 'vendorB-asr-1', file: await file(), response_format: 'verbose_json',
            timestamp_granularities: ['word'] });
        assert.equal(verbose.task, 'transcribe');
        assert.ok(Array.isArray(verbose.words));
    });

    test('speech on an OpenAI-compatible upstream comes back as 48 kHz stereo', async () => {
        const res = await client.audio.speech.create({
            model: 'vendorB-tts-1', voice: 'alloy', input: 'Hello from the upstream.' });
        const buf = Buffer.from(await res.arrayBuffer());
        assert.deepEqual(wavInfo(buf), { riff: 'RIFF', wave: 'WAVE', channels: 2, rate: 48000, bits: 16 });
    });

    test('voice cloning through fish-speech', async () => {
        const before = await up.settledBalance();
        const input = 'This one is cloned upstream.';
        const form = new FormData();
        form.append('model', 'vendorE-tts-nano');
        form.append('input', input);
        form.append('prompt_audio', new Blob([speechWav], { type: 'audio/wav' }), 'reference.wav');
        const r = await fetch(`${up.url}/v1/audio/speech`,
            { method: 'POST', headers: { Authorization: `Bearer ${up.apiKey}` }, body: form });
        assert.equal(r.status, 200, await r.clone().text());
        assert.equal(r.headers.get('x-voice-clone'), 'upstream');
        assert.equal(wavInfo(Buffer.from(await r.arrayBuffer())).rate, 48000);
        assert.equal(before - await up.settledBalance(), BigInt(input.length) * UNITS_PER_CHARACTER);
        const tts = up.fake.requestsSince(0).filter((q) => q.path === '/v1/tts');
        assert.ok(tts.length >= 1, 'fish-speech was called');
    });

    test('upstream faults are typed errors and cost nothing', async () => {
        const before = await up.settledBalance();
        const limited = await rejects(async () => client.audio.transcriptions.create({
            model: 'vendorB-asr-1', file: await toFile(speechWav, 'a.wav'),
            prompt: '[fake fault=429:7]' }));
        assert.ok(limited instanceof OpenAI.RateLimitError);
        assert.equal(limited.headers.get('retry-after'), '7');
        const failed = await rejects(async () => client.audio.speech.create({
            model: 'vendorB-tts-1', voice: 'alloy', input: 'Hi [fake fault=500]' }));
        assert.equal(failed.status, 502);
        assert.equal(await up.settledBalance(), before);
    });
});

test('discovery: the audio models and the voices', async () => {
    const ids = (await stack.models()).map((m) => m.id);
    for (const id of ['rapid', 'vendorB-asr-1', 'vendorE-tts-nano'])
        assert.ok(ids.includes(id), id);
    const voices = await (await fetch(`${stack.url}/v1/audio/voices`)).json();
    const names = voices.data.map((v) => v.id);
    for (const v of ['alloy', 'nova', 'zh-welcome', 'ja-news', 'demo-1', 'demo-29'])
        assert.ok(names.includes(v), v);
});
