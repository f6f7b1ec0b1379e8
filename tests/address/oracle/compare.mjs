// Checks server/address/CoordTransform (through coord_oracle_cli) against the npm package
// coordtransform 2.1.2 on seeded random points inside and around China's bounding box.
//   node compare.mjs PATH_TO_coord_oracle_cli [POINTS]
// Same formulas, so the forward transforms and the one-step inverse must agree within
// TOLERANCE degrees (in practice bit for bit or within a few ulps). The exact (iterative)
// inverse has no counterpart in coordtransform: it is checked by mapping its answer forward with
// coordtransform's wgs84togcj02, which must give the input back within TOLERANCE.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ct = require('coordtransform');

const TOLERANCE = 1e-9; // degrees; ~0.1 mm
const cli = process.argv[2];
const count = Number(process.argv[3] ?? 5000);
if (!cli) {
    console.error('usage: node compare.mjs PATH_TO_coord_oracle_cli [POINTS]');
    process.exit(2);
}

// mulberry32: a tiny seeded generator, so every run checks the same points.
function rng(seed) {
    return () => {
        seed |= 0;
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
const rand = rng(20240607);
const between = (lo, hi) => lo + (hi - lo) * rand();

// China's box is lon 73.66..135.05, lat 3.86..53.55 (exclusive).
const outOfChina = (lng, lat) => !(lng > 73.66 && lng < 135.05 && lat > 3.86 && lat < 53.55);
const points = [];
for (let i = 0; i < count; i++) {
    const kind = i % 10;
    if (kind < 6) {
        points.push([between(73.66, 135.05), between(3.86, 53.55)]); // inside the box
    } else if (kind < 9) {
        points.push([between(65, 145), between(-5, 62)]); // around it, partly outside
    } else {
        // within 0.01 degree of an edge of the box, both sides
        const edges = [
            () => [73.66 + between(-0.01, 0.01), between(3.86, 53.55)],
            () => [135.05 + between(-0.01, 0.01), between(3.86, 53.55)],
            () => [between(73.66, 135.05), 3.86 + between(-0.01, 0.01)],
            () => [between(73.66, 135.05), 53.55 + between(-0.01, 0.01)],
        ];
        points.push(edges[Math.floor(rand() * 4)]());
    }
}
points.push([116.397428, 39.90923], [121.4737, 31.2304], [2.2945, 48.8584], [-122.4194, 37.7749]);

// [from, to, oracle] for the formulas coordtransform has; [from, to, null, forward, viaGcj] for
// the exact inverses: forward(answer) must give the input back, and viaGcj(input) is the
// (approximate) GCJ02 point on the way, for the box-edge test below.
const toBd = (g) => ct.gcj02tobd09(...g);
const cases = [
    ['wgs84', 'gcj02', (p) => ct.wgs84togcj02(...p)],
    ['cgcs2000', 'gcj02', (p) => ct.wgs84togcj02(...p)],
    ['gcj02', 'wgs84-onestep', (p) => ct.gcj02towgs84(...p)],
    ['gcj02', 'bd09', (p) => ct.gcj02tobd09(...p)],
    ['bd09', 'gcj02-onestep', (p) => ct.bd09togcj02(...p)],
    ['wgs84', 'bd09', (p) => ct.gcj02tobd09(...ct.wgs84togcj02(...p))],
    ['cgcs2000', 'bd09-onestep', (p) => ct.gcj02tobd09(...ct.wgs84togcj02(...p))],
    ['bd09', 'wgs84-onestep', (p) => ct.gcj02towgs84(...ct.bd09togcj02(...p))],
    ['wgs84', 'wgs84', (p) => p],
    ['wgs84', 'cgcs2000', (p) => p],
    ['gcj02', 'wgs84', null, (w) => ct.wgs84togcj02(...w), (p) => p],
    ['bd09', 'gcj02', null, toBd, null],
    ['bd09', 'cgcs2000', null, (w) => toBd(ct.wgs84togcj02(...w)), (p) => ct.bd09togcj02(...p)],
];

const lines = [];
const jobs = [];
for (const p of points) {
    for (const c of cases) {
        lines.push(`${c[0]} ${c[1]} ${p[0].toPrecision(17)} ${p[1].toPrecision(17)}`);
        jobs.push({ p, c });
    }
}
const run = spawnSync(cli, [], { input: lines.join('\n') + '\n', maxBuffer: 1 << 28 });
if (run.status !== 0 || run.error) {
    console.error(`coord_oracle_cli failed: ${run.error ?? run.stderr.toString()}`);
    process.exit(1);
}
const out = run.stdout.toString().trimEnd().split('\n');
if (out.length !== jobs.length) {
    console.error(`expected ${jobs.length} answers, got ${out.length}`);
    process.exit(1);
}

const metres = (a, b) => {
    const k = 111319.49;
    const dx = (a[0] - b[0]) * k * Math.cos(((a[1] + b[1]) / 2) * (Math.PI / 180));
    return Math.hypot(dx, (a[1] - b[1]) * k);
};
const stats = new Map();
let failures = 0;
let edgeSkipped = 0;
let maxExactVsOneStep = 0;
for (let i = 0; i < jobs.length; i++) {
    const { p, c } = jobs[i];
    const key = `${c[0]} -> ${c[1]}${c[2] ? '' : ' (exact, checked forward)'}`;
    if (out[i].startsWith('ERROR')) {
        console.error(`${key} (${p}): ${out[i]}`);
        failures++;
        continue;
    }
    const got = out[i].split(' ').map(Number);
    let expected = p;
    let actual = got;
    if (c[2]) {
        expected = c[2](p);
    } else {
        const gcj = c[4] ? c[4](p) : null;
        const nearEdge = (q) =>
            Math.min(Math.abs(q[0] - 73.66), Math.abs(q[0] - 135.05), Math.abs(q[1] - 3.86),
                     Math.abs(q[1] - 53.55)) < 1e-6;
        if (gcj && (outOfChina(...got) !== outOfChina(...gcj) || nearEdge(got))) {
            // The answer lies across (or on) the box edge from the GCJ02 point: forward,
            // coordtransform would not shift it. Only possible within the offset's length
            // (< 0.01 degree) of the edge.
            edgeSkipped++;
            continue;
        }
        actual = c[3](got);
        if (c[0] === 'gcj02')
            maxExactVsOneStep = Math.max(maxExactVsOneStep, metres(got, ct.gcj02towgs84(...p)));
    }
    const diff = Math.max(Math.abs(actual[0] - expected[0]), Math.abs(actual[1] - expected[1]));
    const s = stats.get(key) ?? { n: 0, max: 0, worst: null };
    s.n++;
    if (diff > s.max) {
        s.max = diff;
        s.worst = p;
    }
    stats.set(key, s);
    if (!(diff <= TOLERANCE)) {
        if (failures < 20)
            console.error(`MISMATCH ${key} at ${p}: got ${got}, expected ${expected} (${diff})`);
        failures++;
    }
}

console.log(`coordtransform 2.1.2 vs CoordTransform: ${points.length} points, ${jobs.length} conversions, tolerance ${TOLERANCE} deg`);
for (const [key, s] of stats)
    console.log(`  ${key.padEnd(44)} n=${s.n}  max |diff| = ${s.max.toExponential(2)} deg`);
console.log(`  exact inverse vs one-step inverse: max ${maxExactVsOneStep.toFixed(3)} m apart`);
console.log(`  exact answers across the box edge (not checkable forward): ${edgeSkipped}`);
if (edgeSkipped > points.length / 100) {
    console.error('too many answers across the box edge');
    failures++;
}
if (failures) {
    console.error(`FAIL: ${failures} mismatches`);
    process.exit(1);
}
console.log('PASS');
