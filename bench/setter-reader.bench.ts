/**
 * The setter reader's time per MB on one file of 1, 4, 16 and 64 MB (issue 9: it was quadratic —
 * each double-quoted scalar searched for a backslash to the end of the file). Target: time per MB
 * flat within 2× from 1 to 64 MB. Prints figures (median CPU time of 3 after a warm-up) and the
 * load average; asserts nothing.
 *
 * Each file is one YAML document in the reader's plain subset: a ConfigMap-like map of
 * double-quoted, single-quoted and plain values, with a marked image line every 200 lines, so the
 * quick reader (not the `yaml` library) reads all of it.
 */
import { cpus, loadavg } from 'node:os';
import { findMarkers } from '../src/write/setters/markers.js';

/** `node --import tsx bench/setter-reader.bench.ts 1 4` runs only those sizes. */
const SIZES_MB = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [1, 4, 16, 64];

function documentOf(bytes: number): { text: string; markers: number } {
  const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: big', 'data:'];
  let size = lines.join('\n').length + 1;
  let markers = 0;
  for (let i = 0; size < bytes; i++) {
    const line =
      i % 200 === 0
        ? `  image-${i}: registry.example.com/team/svc-${i % 50}:1.0.0 # {"$imagepolicy": "apps:policy-${i % 50}"}`
        : i % 3 === 0
          ? `  key-${i}: "value number ${i}, with words in double quotes"`
          : i % 3 === 1
            ? `  key-${i}: 'it''s value ${i} in single quotes'`
            : `  key-${i}: plain value ${i} without quotes`;
    if (i % 200 === 0) markers++;
    lines.push(line);
    size += line.length + 1;
  }
  return { text: lines.join('\n') + '\n', markers };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function main(): void {
  process.stdout.write(
    `load average: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} on ${cpus().length} CPUs\n`,
  );
  const perMb: number[] = [];
  for (const mb of SIZES_MB) {
    const { text, markers } = documentOf(mb * 1024 * 1024);
    const runs: number[] = [];
    for (let k = 0; k < 4; k++) {
      const c0 = process.cpuUsage();
      const r = findMarkers(text, 'big.yaml');
      const c = process.cpuUsage(c0);
      if (r.error !== null || r.markers.length !== markers)
        throw new Error(`${mb} MB: ${r.markers.length} of ${markers} markers, error ${r.error}`);
      if (k > 0) runs.push((c.user + c.system) / 1000);
    }
    const ms = median(runs);
    perMb.push(ms / mb);
    process.stdout.write(
      `${String(mb).padStart(2)} MB, ${markers} markers: ${ms.toFixed(0)} ms CPU, ${(ms / mb).toFixed(1)} ms/MB\n`,
    );
  }
  const ratio = Math.max(...perMb) / Math.min(...perMb);
  process.stdout.write(`time per MB, largest / smallest: ${ratio.toFixed(2)}× (target ≤ 2×)\n`);
}

main();
