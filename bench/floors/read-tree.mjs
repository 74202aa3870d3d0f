// The floor under `pawl setters apply` (bench/setters.bench.ts): node itself walking a tree and
// reading every YAML file for the marker token, as pawl's scan does (one read into a reused
// buffer, no stat), and nothing else: no parsing, no writing, no pawl. Plain JavaScript run
// straight by node with pawl's one-shot flags, so its CPU is comparable with grep's and the
// CLI's. Usage: node --no-opt read-tree.mjs ROOT; prints the number of marked files.
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

const TOKEN = Buffer.from('"$imagepolicy"');
const scratch = Buffer.allocUnsafe(1 << 16);
let marked = 0;

function read(path) {
  const fd = openSync(path, 'r');
  try {
    let buf = scratch;
    let off = 0;
    for (;;) {
      if (off === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 4);
        buf.copy(bigger, 0, 0, off);
        buf = bigger;
      }
      const n = readSync(fd, buf, off, buf.length - off, null);
      if (n === 0) break;
      off += n;
    }
    if (buf.subarray(0, off).indexOf(TOKEN) >= 0) marked++;
  } finally {
    closeSync(fd);
  }
}

function walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.yaml') || e.name.endsWith('.yml')) read(p);
  }
}

walk(process.argv[2]);
process.stdout.write(`${marked}\n`);
