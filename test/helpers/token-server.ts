/**
 * A small Docker token server for tests (https://distribution.github.io/distribution/spec/auth/token/).
 * It signs RS256 JWTs with a key whose self-signed certificate is the registry's
 * `auth.token.rootcertbundle`. distribution 2.8 accepts a token whose header carries `x5c`
 * (the chain is verified against the root bundle) or a `kid` in libtrust's key-id format;
 * we send both, so either path works.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

const exec = promisify(execFile);

export interface TokenServerOptions {
  /** Users allowed to authenticate (Basic on the token request): name → password. */
  users: Record<string, string>;
  service: string;
  issuer: string;
  /** Grant pull to anonymous requests too (Docker Hub style). Default false: anonymous gets no access. */
  anonymousPull?: boolean;
  /** OAuth2 refresh tokens (Docker's `identitytoken`) accepted on POST: token → user. */
  identityTokens?: Record<string, string>;
  /** Token lifetime in seconds (default 300). */
  expiresIn?: number;
}

export interface TokenServer {
  /** `http://127.0.0.1:PORT/token` */
  realm: string;
  service: string;
  issuer: string;
  /** PEM file holding the signing certificate (the registry's rootcertbundle). */
  certFile: string;
  /** Every token issued so far (the tests search logs and stores for them). */
  issued: string[];
  /** Number of token requests received, answered or not. */
  requests: number;
  /** Make the next N token requests fail with this status. */
  failNext(count: number, status: number): void;
  stop(): Promise<void>;
}

export interface KeyPair {
  dir: string;
  keyFile: string;
  certFile: string;
  key: KeyObject;
  certDer: Buffer;
}

/** An RSA key and a self-signed certificate made with `openssl req`. */
export async function makeSelfSigned(cn: string, dir?: string): Promise<KeyPair> {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'pawl-cert-')));
  const keyFile = join(d, `${cn}.key`);
  const certFile = join(d, `${cn}.crt`);
  await exec('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-sha256',
    '-days',
    '2',
    '-subj',
    `/CN=${cn}`,
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  const key = createPrivateKey(await readFile(keyFile));
  const pem = await readFile(certFile, 'utf8');
  const b64 = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  return { dir: d, keyFile, certFile, key, certDer: Buffer.from(b64, 'base64') };
}

/** libtrust's key id: base32 of the first 240 bits of SHA-256(SPKI DER), in 4-char groups. */
export function libtrustKeyId(key: KeyObject): string {
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const hash = createHash('sha256').update(spki).digest().subarray(0, 30);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const byte of hash) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i + 5 <= bits.length; i += 5) out += alphabet[parseInt(bits.slice(i, i + 5), 2)];
  return out.match(/.{4}/g)!.join(':');
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

export function signJwt(pair: KeyPair, claims: Record<string, unknown>): string {
  const header = {
    typ: 'JWT',
    alg: 'RS256',
    kid: libtrustKeyId(pair.key),
    x5c: [pair.certDer.toString('base64')],
  };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = sign('sha256', Buffer.from(input), pair.key);
  return `${input}.${b64url(signature)}`;
}

function parseBasic(req: IncomingMessage): { user: string; password: string } | null {
  const h = req.headers.authorization;
  if (!h || !h.toLowerCase().startsWith('basic ')) return null;
  const decoded = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return null;
  return { user: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

function parseScopes(scopes: string[]): { type: string; name: string; actions: string[] }[] {
  const out: { type: string; name: string; actions: string[] }[] = [];
  for (const s of scopes) {
    for (const one of s.split(' ')) {
      // repository:name:actions — the name itself may contain a port-free path only.
      const first = one.indexOf(':');
      const last = one.lastIndexOf(':');
      if (first < 0 || last === first) continue;
      out.push({
        type: one.slice(0, first),
        name: one.slice(first + 1, last),
        actions: one.slice(last + 1).split(','),
      });
    }
  }
  return out;
}

export async function startTokenServer(opts: TokenServerOptions): Promise<TokenServer> {
  const pair = await makeSelfSigned('pawl-token-signer');
  const issued: string[] = [];
  let failures: { count: number; status: number } = { count: 0, status: 500 };
  const state = { requests: 0 };
  const issue = (
    subject: string,
    audience: string,
    access: { type: string; name: string; actions: string[] }[],
  ): string => {
    const now = Math.floor(Date.now() / 1000);
    const token = signJwt(pair, {
      iss: opts.issuer,
      sub: subject,
      aud: audience,
      exp: now + (opts.expiresIn ?? 300),
      nbf: now - 10,
      iat: now,
      jti: createHash('sha256').update(`${now}-${Math.random()}`).digest('hex').slice(0, 16),
      access,
    });
    issued.push(token);
    return token;
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.requests++;
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/token') {
      res.writeHead(404).end();
      return;
    }
    if (failures.count > 0) {
      failures.count--;
      res
        .writeHead(failures.status, { 'content-type': 'application/json' })
        .end('{"errors":[{"code":"UNAVAILABLE"}]}');
      return;
    }
    if (req.method === 'POST') {
      // OAuth2 refresh-token grant, as Docker sends it for an identity token.
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const form = new URLSearchParams(raw);
        const user = opts.identityTokens?.[form.get('refresh_token') ?? ''];
        if (form.get('grant_type') !== 'refresh_token' || !user) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
          return;
        }
        const scopes = parseScopes(form.getAll('scope'));
        const token = issue(user, form.get('service') ?? opts.service, scopes);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            access_token: token,
            expires_in: opts.expiresIn ?? 300,
            scope: form.getAll('scope').join(' '),
          }),
        );
      });
      return;
    }
    const basic = parseBasic(req);
    let subject = '';
    if (basic) {
      if (opts.users[basic.user] !== basic.password) {
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}');
        return;
      }
      subject = basic.user;
    }
    const requested = parseScopes(url.searchParams.getAll('scope'));
    const access =
      basic || opts.anonymousPull
        ? requested.map((a) => ({ ...a, actions: basic ? a.actions : a.actions.filter((x) => x === 'pull') }))
        : [];
    const expiresIn = opts.expiresIn ?? 300;
    const token = issue(subject, url.searchParams.get('service') ?? opts.service, access);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        token,
        access_token: token,
        expires_in: expiresIn,
        issued_at: new Date().toISOString(),
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref(); // a forgotten stop() must not hang the test process
  const port = (server.address() as AddressInfo).port;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service: opts.service,
    issuer: opts.issuer,
    certFile: pair.certFile,
    issued,
    get requests() {
      return state.requests;
    },
    failNext(count: number, status: number) {
      failures = { count, status };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(pair.dir, { recursive: true, force: true });
    },
  };
}
