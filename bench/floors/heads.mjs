// The floor under the guard's cold-pass cost (bench/run.bench.ts): N HEADs of manifests, 8 at
// a time, through undici's lowest-level API (an Agent's `dispatch` with a handler that keeps
// nothing), in a fresh node with pawl's one-shot flags, as a cold pass makes them. No pawl:
// no timeouts, retries, authentication or bookkeeping. Prints the CPU of the HEADs alone, in
// microseconds per HEAD, start-up and the opening of the 8 connections excluded.
// Usage: node --no-opt heads.mjs ORIGIN PATH_TEMPLATE N (PATH_TEMPLATE: `{i}` is 0..N-1).
import { Agent } from 'undici';

const [origin, template, count] = process.argv.slice(2);
const n = Number(count);
const agent = new Agent({ keepAliveTimeout: 5_000 });
const accept =
  'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json';

function head(i) {
  return new Promise((resolve, reject) => {
    let status = 0;
    agent.dispatch(
      { origin, path: template.replace('{i}', String(i)), method: 'HEAD', headers: { accept }, reset: false },
      {
        onConnect() {},
        onHeaders(s) {
          status = s;
          return true;
        },
        onData() {
          return true;
        },
        onComplete() {
          if (status === 200) resolve();
          else reject(new Error(`HEAD ${i}: ${status}`));
        },
        onError: reject,
      },
    );
  });
}

// A pass's HEADs ride the connections its scan opened: open them before measuring.
await Promise.all(Array.from({ length: 8 }, (_, i) => head(i % n)));
const c0 = process.cpuUsage();
let next = 0;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < n) await head(next++);
  }),
);
const c = process.cpuUsage(c0);
process.stdout.write(`${JSON.stringify({ usPerHead: (c.user + c.system) / n })}\n`);
await agent.close();
