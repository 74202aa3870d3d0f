/**
 * The registry client's authorization. It follows the registry's `WWW-Authenticate` challenge
 * from the `/v2/` ping: none, Basic, or Bearer via the token service (anonymous, with a user
 * name and password, or an identity token's refresh-token grant), tokens cached per scope until
 * they expire and fetched again on a 401. Credentials come from the cloud providers' hook
 * (`credentialSource`, asked again shortly before they expire), a Secret, or the Docker config
 * (credentials.ts).
 */
import type { Secret } from '../../config/index.js';
import {
  credentialsFromDockerConfig,
  credentialsFromSecret,
  secretValues,
  type Credentials,
  type HelperRunner,
} from './credentials.js';
import type { CredentialSource } from './cloud/index.js';
import { describeStatus, type Exchanger, type Fetched, type Op } from './exchange.js';
import type { HostState } from './pool.js';
import { tokenAnswer, type TokenAnswer } from './schemas.js';
import type { RepositoryRef } from './types.js';

/** The client's options that say where its credentials come from (see RegistryClientOptions). */
export interface AuthOptions {
  /** `spec.secretRef`: dockerconfigjson (or dockercfg, or basic-auth). Without it, the Docker config. */
  secret?: Secret;
  /**
   * Credentials from elsewhere than a Secret or the Docker config (`provider: aws | gcp | azure`):
   * used instead of both, and asked again shortly before they expire.
   */
  credentialSource?: CredentialSource;
  /** Docker config directory (default `$DOCKER_CONFIG` or `~/.docker`); false: never read it. */
  dockerConfig?: string | false;
  runCredentialHelper?: HelperRunner;
}

/** Credentials that expire are fetched again this long before they do. */
const CREDENTIALS_RENEW_MS = 5 * 60_000;

type Challenge =
  { scheme: 'none' } | { scheme: 'basic' } | { scheme: 'bearer'; realm: string; service?: string };

/** Parses `WWW-Authenticate` (one challenge; registries send one). */
export function parseChallenge(header: string | null): Challenge {
  if (!header) return { scheme: 'none' };
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return { scheme: 'none' };
  const scheme = m[1]!.toLowerCase();
  const params: Record<string, string> = {};
  const re = /(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
  for (let p = re.exec(m[2]!); p; p = re.exec(m[2]!)) params[p[1]!.toLowerCase()] = p[2] ?? p[3] ?? '';
  if (scheme === 'basic') return { scheme: 'basic' };
  if (scheme === 'bearer' && params.realm)
    return { scheme: 'bearer', realm: params.realm, ...(params.service ? { service: params.service } : {}) };
  return { scheme: 'none' };
}

/** A client's credentials, challenges and tokens, each remembered per registry, origin or scope. */
export class Authorizer {
  private readonly challenges = new Map<string, Promise<Challenge>>();
  private readonly tokens = new Map<string, { header: string; expires: number }>();
  private readonly credentials = new Map<
    string,
    { promise: Promise<Credentials | null>; renewAt?: number }
  >();

  constructor(
    private readonly ex: Exchanger,
    private readonly opts: AuthOptions,
  ) {}

  /** A request with authentication: one retry with a fresh token (or re-read challenge) on 401. */
  async request(
    op: Op,
    repo: RepositoryRef,
    method: string,
    url: string,
    headers: Record<string, string>,
    maxBytes: number,
  ): Promise<Fetched> {
    const origin = this.ex.origin(repo);
    const host = this.ex.pool.host(origin);
    // The ping and the token request name their own steps while they run; the request after them is the caller's step.
    const step = op.step;
    let challenge = await this.challenge(op, origin, host);
    for (let attempt = 0; ; attempt++) {
      const auth = await this.authorization(op, repo, challenge, attempt > 0);
      op.step = step;
      const f = await this.ex.send(
        op,
        host,
        method,
        url,
        auth ? { ...headers, authorization: auth } : headers,
        maxBytes,
      );
      if (f.status !== 401 && f.status !== 403) {
        if (f.status < 500) host.recordSuccess();
        return f;
      }
      if (attempt > 0 || f.status === 403) {
        const creds = await this.creds(repo);
        const who = creds
          ? `the credentials from ${creds.source}`
          : 'anonymous access (no credentials found)';
        throw this.ex.fail(
          op,
          `${repo.registry} refused ${who} for ${repo.path} (${describeStatus(f)})`,
          f.status,
        );
      }
      const fresh = parseChallenge(f.headers.get('www-authenticate'));
      if (fresh.scheme !== 'none') {
        challenge = fresh;
        this.challenges.set(origin, Promise.resolve(fresh));
      }
    }
  }

  private creds(repo: RepositoryRef): Promise<Credentials | null> {
    const registry = repo.registry;
    const hit = this.credentials.get(registry);
    if (hit && (hit.renewAt === undefined || this.ex.pool.now() < hit.renewAt)) return hit.promise;
    const promise = (async () => {
      let c: Credentials | null;
      if (this.opts.credentialSource) c = await this.opts.credentialSource(registry, this.ex.origin(repo));
      else if (this.opts.secret) c = credentialsFromSecret(this.opts.secret, registry);
      else if (this.opts.dockerConfig === false) c = null;
      else {
        c = await credentialsFromDockerConfig(registry, {
          ...(typeof this.opts.dockerConfig === 'string' ? { dir: this.opts.dockerConfig } : {}),
          ...(this.opts.runCredentialHelper ? { runHelper: this.opts.runCredentialHelper } : {}),
        });
      }
      for (const v of secretValues(c)) this.ex.redactor.add(v);
      this.ex.log.debug({ registry, credentials: c ? c.source : 'none (anonymous)' }, 'registry credentials');
      return c;
    })();
    const entry: { promise: Promise<Credentials | null>; renewAt?: number } = { promise };
    this.credentials.set(registry, entry);
    promise.then(
      // Cloud tokens: ask again five minutes before they expire (ECR 12h, GCP 1h, ACR ~3h).
      (c) => {
        if (c?.expiresAt !== undefined) entry.renewAt = c.expiresAt - CREDENTIALS_RENEW_MS;
      },
      // A failure (the token endpoint was down) is not remembered: the next operation asks again.
      () => {
        if (this.credentials.get(registry) === entry) this.credentials.delete(registry);
      },
    );
    return promise;
  }

  private challenge(op: Op, origin: string, host: HostState): Promise<Challenge> {
    let p = this.challenges.get(origin);
    if (!p) {
      p = (async () => {
        op.step = 'the /v2/ ping';
        const f = await this.ex.send(op, host, 'GET', `${origin}/v2/`, {}, 1 << 20);
        if (f.status === 200) return { scheme: 'none' } as Challenge;
        if (f.status === 401) return parseChallenge(f.headers.get('www-authenticate'));
        throw this.ex.fail(
          op,
          `${origin}/v2/ answered ${describeStatus(f)}; is this an OCI registry?`,
          f.status,
        );
      })();
      this.challenges.set(origin, p);
      p.catch(() => this.challenges.delete(origin));
    }
    return p;
  }

  /** `Basic` of a user name and password, its value told to the redactor. */
  private basic(username: string, password: string): string {
    const b = Buffer.from(`${username}:${password}`).toString('base64');
    this.ex.redactor.add(b);
    return `Basic ${b}`;
  }

  /** The Authorization header for a repository's pull scope, or undefined for anonymous access. */
  private async authorization(
    op: Op,
    repo: RepositoryRef,
    challenge: Challenge,
    fresh: boolean,
  ): Promise<string | undefined> {
    if (challenge.scheme === 'none') return undefined;
    const creds = await this.creds(repo);
    if (challenge.scheme === 'basic') {
      if (!creds?.password || !creds.username) {
        throw this.ex.fail(
          op,
          `${repo.registry} requires a user name and password (Basic auth) and none were found; set spec.secretRef, or log in with docker login`,
          401,
        );
      }
      return this.basic(creds.username, creds.password);
    }
    if (creds?.registryToken) return `Bearer ${creds.registryToken}`;
    const scope = `repository:${repo.path}:pull`;
    const key = `${challenge.realm}|${challenge.service ?? ''}|${scope}`;
    const cached = this.tokens.get(key);
    if (!fresh && cached && cached.expires > this.ex.pool.now()) return cached.header;
    const realm = new URL(challenge.realm);
    op.step = 'authentication';
    const f = await this.askToken(op, realm, challenge.service, scope, creds);
    if (f.status === 401 || f.status === 403) {
      throw this.ex.fail(
        op,
        `the token service ${realm.origin} refused ${creds ? `the credentials from ${creds.source}` : 'anonymous access'} (${f.status})`,
        f.status,
      );
    }
    if (f.status !== 200)
      throw this.ex.fail(op, `the token service ${realm.origin} answered ${describeStatus(f)}`, f.status);
    let answer: TokenAnswer;
    try {
      answer = tokenAnswer.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      throw this.ex.fail(op, `the token service ${realm.origin} answered something that is not a token`);
    }
    const token = answer.token ?? answer.access_token;
    if (!token) throw this.ex.fail(op, `the token service ${realm.origin} answered without a token`);
    this.ex.redactor.add(token);
    if (answer.refresh_token) this.ex.redactor.add(answer.refresh_token);
    // Docker's default lifetime when the service does not say: 60s. Refresh a little early.
    const lifetime = Math.max(answer.expires_in ?? 60, 10) * 1000;
    const header = `Bearer ${token}`;
    this.tokens.set(key, { header, expires: this.ex.pool.now() + lifetime - 5000 });
    return header;
  }

  /** Asks the token service for a pull token: the answer whatever its status. */
  private askToken(
    op: Op,
    realm: URL,
    service: string | undefined,
    scope: string,
    creds: Credentials | null,
  ): Promise<Fetched> {
    const realmHost = this.ex.pool.host(realm.origin);
    if (creds?.identityToken) {
      // OAuth2 refresh-token grant, as Docker does with an identity token.
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: creds.identityToken,
        client_id: 'pawl',
        scope,
      });
      if (service) form.set('service', service);
      return this.ex.send(
        op,
        realmHost,
        'POST',
        realm.toString(),
        { 'content-type': 'application/x-www-form-urlencoded' },
        1 << 20,
        form.toString(),
      );
    }
    if (service) realm.searchParams.set('service', service);
    realm.searchParams.set('scope', scope);
    const headers: Record<string, string> = {};
    if (creds?.username && creds.password) headers.authorization = this.basic(creds.username, creds.password);
    return this.ex.send(op, realmHost, 'GET', realm.toString(), headers, 1 << 20);
  }
}
