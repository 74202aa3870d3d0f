// The floor under a pass's registry traffic (bench/run.bench.ts, issue 27): the requests `pawl run`
// makes, through undici alone, as a whole process (start-up and loading undici included, so its
// CPU compares with the CLI's). Same registry, same connection settings as pawl's transport
// (src/scan/registry/transport.ts: one keep-alive Agent, 5 s idle, HEADs with `reset: false`),
// eight at a time as the scan and the policy evaluation go. Each tag list is read whole and
// parsed, as pawl must; nothing else: no timeouts, retries, authentication, store or selection.
//
// Usage: node --no-opt requests.mjs ORIGIN REPO_TEMPLATE N [HEAD_TAG]
//   REPO_TEMPLATE: `{i}` is 0..N-1. N tag lists (`GET /v2/REPO/tags/list?n=1000`), then, with
//   HEAD_TAG, N HEADs of `REPO:HEAD_TAG` (the cold pass's verified candidates).
// Prints {"lists":N,"heads":M,"tags":T}.
import { Agent } from 'undici';

const [origin, template, count, headTag] = process.argv.slice(2);
const n = Number(count);
const agent = new Agent({ keepAliveTimeout: 5_000, connect: {} });
const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.v1+prettyjws',
  'application/vnd.docker.distribution.manifest.v1+json',
].join(', ');

function send(method, path, accept) {
  return new Promise((resolve, reject) => {
    let status = 0;
    const chunks = [];
    agent.dispatch(
      { origin, path, method, headers: { accept }, ...(method === 'HEAD' ? { reset: false } : {}) },
      {
        onConnect() {},
        onHeaders(s) {
          status = s;
          return true;
        },
        onData(chunk) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          if (status === 200) resolve(Buffer.concat(chunks));
          else reject(new Error(`${method} ${path}: ${status}`));
        },
        onError: reject,
      },
    );
  });
}

async function eight(work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

const repo = (i) => template.replace('{i}', String(i));
let tags = 0;
await eight(async (i) => {
  const body = await send('GET', `/v2/${repo(i)}/tags/list?n=1000`, 'application/json');
  tags += JSON.parse(body.toString('utf8')).tags.length;
});
let heads = 0;
if (headTag)
  await eight(async (i) => {
    await send('HEAD', `/v2/${repo(i)}/manifests/${headTag}`, MANIFEST_ACCEPT);
    heads++;
  });
await agent.close();
process.stdout.write(`${JSON.stringify({ lists: n, heads, tags })}\n`);
