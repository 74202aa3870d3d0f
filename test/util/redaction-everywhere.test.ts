/**
 * Issue 8, "must show": a password, a bearer token, a basic-auth URL and an identity token are
 * fed through every path that logs, stores or reports — the registry client (requests, recorded
 * responses, errors), the store (the SQLite file, read as bytes), git (the runner's errors and the
 * workspace's logs) and the CLI's reports — and none of them comes out.
 *
 * The registry here is a hostile HTTP server on loopback that echoes credentials back in
 * headers, bodies, Link URLs and error messages: a real registry never does, which is the point.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliResult } from '../helpers/world.js';

const PASSWORD = 'pw-Zq8Rk3Lm';
const BEARER = 'bt-Hx7Yp2Wc9Ve4';
const IDENTITY_TOKEN = 'idt-Fu6Nr1Sd8Ka';
const BASIC = Buffer.from(`alice:${PASSWORD}`).toString('base64');

function basicAuthUrl(host: string, path: string): string {
  return `http://alice:${PASSWORD}@${host}${path}`;
}

/** Every form in which a secret could leak. */
const FORBIDDEN = [PASSWORD, BEARER, IDENTITY_TOKEN, BASIC, `alice:${PASSWORD}`];

function leaks(text: string | Buffer): string[] {
  const b = typeof text === 'string' ? Buffer.from(text) : text;
  return FORBIDDEN.filter((s) => b.includes(s));
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe('no credential reaches a log, the store or a report', () => {
  let server: Server;
  let host = '';
  let dir = '';
  let configDir = '';
  let stateDir = '';
  const seen: string[] = [];
  const outputs: { what: string; result: CliResult }[] = [];

  /**
   * What a careless registry says back: everything the request carried, decoded (the Basic
   * credentials as a password and as a basic-auth URL, the refresh token as an identity token).
   */
  const echo = (req: IncomingMessage, body: string): string => {
    const auth = req.headers.authorization ?? '';
    const parts = [`you sent ${auth || 'nothing'}`];
    if (auth.startsWith('Basic ')) {
      const [user, password] = Buffer.from(auth.slice(6), 'base64').toString().split(':');
      parts.push(`password ${password}`, `try http://${user}:${password}@${host}/v2/`);
    }
    const refresh = new URLSearchParams(body).get('refresh_token');
    if (refresh) parts.push(`identitytoken ${refresh}`, JSON.stringify({ identitytoken: refresh }));
    return parts.join('; ');
  };

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''} ${body}`);
        const url = new URL(req.url ?? '/', `http://${host}`);
        const json = (status: number, value: unknown, headers: Record<string, string> = {}): void => {
          res.writeHead(status, { 'content-type': 'application/json', ...headers });
          res.end(JSON.stringify(value));
        };
        if (url.pathname === '/v2/' || (url.pathname.startsWith('/v2/') && !req.headers.authorization)) {
          json(
            401,
            { errors: [{ code: 'UNAUTHORIZED', message: echo(req, body) }] },
            {
              'www-authenticate': `Bearer realm="http://${host}/token",service="hostile"`,
            },
          );
        } else if (url.pathname === '/token') {
          json(200, {
            token: BEARER,
            access_token: BEARER,
            refresh_token: IDENTITY_TOKEN,
            expires_in: 300,
            note: echo(req, body),
          });
        } else if (url.pathname === '/v2/org/app/tags/list' && !url.searchParams.has('last')) {
          json(
            200,
            {
              name: 'org/app',
              tags: ['1.0.0'],
              note: echo(req, body),
              identitytoken: IDENTITY_TOKEN,
              password: PASSWORD,
            },
            {
              link: `</v2/org/app/tags/list?last=1.0.0&token=${BEARER}&n=1>; rel="next"`,
              'set-cookie': `session=${BEARER}`,
              'x-echo': echo(req, body),
            },
          );
        } else if (url.pathname === '/v2/org/app/tags/list') {
          json(200, { name: 'org/app', tags: ['1.1.0'] });
        } else if (url.pathname.startsWith('/v2/org/bad/')) {
          json(500, { errors: [{ code: 'UNKNOWN', message: echo(req, body) }] });
        } else {
          // git's smart HTTP, and anything else: a failure that quotes the credentials back.
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(echo(req, body));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address();
    host = `127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

    dir = await mkdtemp(join(tmpdir(), 'pawl-redaction-'));
    configDir = join(dir, 'config');
    stateDir = join(dir, 'state');
    const dockerDir = join(dir, 'docker');
    await Promise.all([mkdir(configDir), mkdir(dockerDir)]);
    const dockerconfig = (entry: Record<string, string>): string =>
      Buffer.from(JSON.stringify({ auths: { [host]: entry } })).toString('base64');
    await writeFile(
      join(configDir, 'objects.yaml'),
      `apiVersion: v1
kind: Secret
metadata: { name: basic, namespace: apps }
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ${dockerconfig({ username: 'alice', password: PASSWORD })}
---
apiVersion: v1
kind: Secret
metadata: { name: identity, namespace: apps }
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ${dockerconfig({ identitytoken: IDENTITY_TOKEN })}
---
apiVersion: v1
kind: Secret
metadata: { name: git, namespace: apps }
stringData:
  bearerToken: ${BEARER}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: app, namespace: apps }
spec:
  image: ${host}/org/app
  interval: 5m
  secretRef: { name: basic }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: bad, namespace: apps }
spec:
  image: ${host}/org/bad
  interval: 5m
  secretRef: { name: identity }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: app, namespace: apps }
spec:
  imageRepositoryRef: { name: app }
  policy: { semver: { range: '>=1.0.0' } }
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: fleet, namespace: apps }
spec:
  url: ${basicAuthUrl(host, '/git/fleet.git')}
  interval: 5m
  ref: { branch: main }
  secretRef: { name: git }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: { name: fleet, namespace: apps }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: fleet }
  git:
    commit: { author: { name: pawl, email: pawl@example.com } }
    push: { branch: main }
  update: { path: ./, strategy: Setters }
`,
    );
    const env = { DOCKER_CONFIG: dockerDir, PAWL_LOG_LEVEL: 'trace' };
    const cli = async (what: string, args: string[]): Promise<CliResult> => {
      const result = await runCli([...args, '-c', configDir, '--state-dir', stateDir], { env });
      outputs.push({ what, result });
      return result;
    };
    await cli('scan', ['scan', '--json']);
    await cli('tags --raw app', ['tags', 'apps/app', '--raw', '--json']);
    await cli('tags --raw bad', ['tags', 'apps/bad', '--raw', '--json']);
    await cli('tags --history', ['tags', 'apps/app', '--history', '--json']);
    await cli('run', ['run', '--json', '--refresh']);
    await cli('explain', ['explain', 'apps/app', '--json']);
  });

  after(async () => {
    await new Promise((r) => server.close(r));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('the secrets were in play: the server received each of them', () => {
    const all = seen.join('\n');
    assert.ok(all.includes(BASIC), 'the password went to the token service (Basic)');
    assert.ok(all.includes(IDENTITY_TOKEN), 'the identity token went to the token service');
    assert.ok(all.includes(`Bearer ${BEARER}`), 'the bearer token went to the registry (and git)');
  });

  test('the paths ran: a scan was stored with its responses, the bad ones failed, run failed on git', () => {
    const by = (w: string): CliResult => outputs.find((o) => o.what === w)!.result;
    const scan = (JSON.parse(by('scan').stdout) as { repositories: { name: string; error: string | null }[] })
      .repositories;
    assert.equal(scan.find((r) => r.name === 'apps/app')?.error, null);
    assert.ok(scan.find((r) => r.name === 'apps/bad')?.error);
    assert.match(by('tags --raw app').stdout, /1\.1\.0/);
    assert.match(by('tags --raw app').stdout, /\[redacted\]/);
    assert.match(by('tags --raw bad').stdout, /UNKNOWN/);
    assert.notEqual(by('run').code, 0);
    assert.match(by('run').stdout, /"failed"/);
    assert.match(by('run').stderr, /"level"/, 'trace logs were written');
  });

  test('no log line, report or message holds one', () => {
    for (const { what, result } of outputs) {
      assert.deepEqual(leaks(result.stdout), [], `stdout of pawl ${what}`);
      assert.deepEqual(leaks(result.stderr), [], `stderr (logs) of pawl ${what}`);
    }
  });

  test('no file in the state directory holds one (the SQLite file read as bytes)', async () => {
    const files = await filesUnder(stateDir);
    assert.ok(
      files.some((f) => f.endsWith('.db') || f.endsWith('.sqlite')),
      files.join(', '),
    );
    for (const f of files) assert.deepEqual(leaks(await readFile(f)), [], f);
  });
});
