import { createPublicKey } from 'node:crypto';
import type { Problem } from '../util/index.js';
import { valueAt } from './issues.js';
import { selectPolicies } from './resolve.js';
import { closest } from './suggest.js';
import { accessDenied } from './access.js';
import { providerHeaders } from './headers.js';
import {
  CONFIG_MAPS,
  EVENT_OBJECT_KINDS,
  type Config,
  type ImageRepository,
  type Kind,
  type PawlObject,
  type Secret,
} from './types.js';
import type { SourceDoc } from './yaml-source.js';

/**
 * An object of a kind pawl reads, valid or not: references are checked from the raw
 * document so that a policy with a bad range still hears that its repository is missing.
 */
export interface Loaded {
  kind: Kind;
  namespace: string;
  name: string;
  raw: unknown;
  doc: SourceDoc;
  /** Set when the object passed validation. */
  obj?: PawlObject;
}

interface Ref {
  path: PropertyKey[];
  kind: Kind;
  namespace: string;
  name: string;
  /** Checks the target once found; returns what is wrong with it. */
  needs?: (target: unknown) => string | undefined;
  /** How a missing target is reported; default error. */
  missing?: Problem['severity'];
}

const RECEIVER_TARGETS = new Set<string>([
  'ImageRepository',
  'ImagePolicy',
  'ImageUpdateAutomation',
  'GitRepository',
]);

/** `spec.verify.secretRef`: at least one `*.pub` key, each a PEM public key node:crypto reads. */
function publicKeysProblem(secret: string, data: Record<string, Buffer>): string | undefined {
  const pubs = Object.keys(data).filter((k) => k.endsWith('.pub'));
  if (pubs.length === 0)
    return `Secret ${secret} has no key ending in .pub; spec.verify needs the signers' PEM public keys there (cosign.pub)`;
  for (const k of pubs) {
    try {
      createPublicKey(data[k]!);
    } catch {
      return `Secret ${secret} key ${k} is not a PEM public key (-----BEGIN PUBLIC KEY-----, as cosign generate-key-pair writes cosign.pub)`;
    }
  }
  return undefined;
}

function str(raw: unknown, path: PropertyKey[]): string | undefined {
  const v = valueAt(raw, path);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The references an object makes, read from its raw document. `config` is only needed to check
 * what a reference needs (`accessFrom` across namespaces); callers after the names leave it out.
 */
export function referencesOf(
  l: Loaded,
  warn: (path: PropertyKey[], message: string) => void,
  config?: Config,
): Ref[] {
  const refs: Ref[] = [];
  const { raw, namespace: ns } = l;
  const add = (
    path: PropertyKey[],
    kind: Kind,
    nsPath?: PropertyKey[],
    needs?: Ref['needs'],
    missing?: Ref['missing'],
  ): void => {
    const name = str(raw, path);
    if (name === undefined) return;
    const namespace = (nsPath && str(raw, nsPath)) || ns;
    refs.push({ path, kind, namespace, name, ...(needs ? { needs } : {}), ...(missing ? { missing } : {}) });
  };
  const keys = (target: unknown): Record<string, Buffer> => (target as Secret).data;
  const secretName = (path: PropertyKey[]): string => `${ns}/${str(raw, path) ?? ''}`;
  switch (l.kind) {
    case 'ImageRepository': {
      const provider = valueAt(raw, ['spec', 'provider']);
      if (provider !== undefined && provider !== 'generic' && str(raw, ['spec', 'secretRef', 'name'])) {
        warn(
          ['spec', 'secretRef'],
          `spec.secretRef is not used with provider ${String(provider)}: the credentials come from the cloud, as in Flux`,
        );
      }
      // What the registry client reads (credentialsFromSecret): a Docker config, or basic-auth.
      add(['spec', 'secretRef', 'name'], 'Secret', undefined, (s) => {
        const k = keys(s);
        return '.dockerconfigjson' in k || '.dockercfg' in k || ('username' in k && 'password' in k)
          ? undefined
          : `Secret ${secretName(['spec', 'secretRef', 'name'])} has neither a ".dockerconfigjson" key nor "username" and "password"; registry credentials are a Docker config (kubectl create secret docker-registry) or a kubernetes.io/basic-auth Secret`;
      });
      add(['spec', 'certSecretRef', 'name'], 'Secret', undefined, (s) => {
        const k = keys(s);
        return 'ca.crt' in k || 'tls.crt' in k || 'caFile' in k || 'certFile' in k
          ? undefined
          : `Secret ${secretName(['spec', 'certSecretRef', 'name'])} has none of ca.crt, tls.crt/tls.key; put the registry's CA in ca.crt`;
      });
      break;
    }
    case 'ImagePolicy': {
      const verifyPath = ['spec', 'verify', 'secretRef', 'name'];
      add(verifyPath, 'Secret', undefined, (s) => publicKeysProblem(secretName(verifyPath), keys(s)));
      const rootPath = ['spec', 'verify', 'trustedRootSecretRef', 'name'];
      add(rootPath, 'Secret', undefined, (s) =>
        'trusted_root.json' in keys(s)
          ? undefined
          : `Secret ${secretName(rootPath)} has no key trusted_root.json; spec.verify.trustedRootSecretRef needs the Sigstore trusted root there`,
      );
      add(
        ['spec', 'imageRepositoryRef', 'name'],
        'ImageRepository',
        ['spec', 'imageRepositoryRef', 'namespace'],
        (target) => {
          const repo = target as ImageRepository;
          const { namespace, name } = repo.metadata;
          if (!config) return undefined;
          return accessDenied(config, ns, {
            label: `ImageRepository ${namespace}/${name}`,
            namespace,
            accessFrom: repo.spec.accessFrom,
          });
        },
      );
      break;
    }
    case 'ImageUpdateAutomation': {
      const sourceKind = valueAt(raw, ['spec', 'sourceRef', 'kind']);
      if (sourceKind === undefined || sourceKind === 'GitRepository') {
        add(['spec', 'sourceRef', 'name'], 'GitRepository', ['spec', 'sourceRef', 'namespace']);
      }
      const keyPath = ['spec', 'git', 'commit', 'signingKey', 'secretRef', 'name'];
      // As Flux's controller: the declared type (default gpg) decides which key must be there.
      const ssh = valueAt(raw, ['spec', 'git', 'commit', 'signingKey', 'type']) === 'ssh';
      add(keyPath, 'Secret', undefined, (s) =>
        ssh
          ? 'identity' in keys(s)
            ? undefined
            : `Secret ${secretName(keyPath)} has no "identity" key; signingKey type ssh needs the SSH private key in identity (and its passphrase, if any, in password)`
          : 'git.asc' in keys(s)
            ? undefined
            : `Secret ${secretName(keyPath)} has no "git.asc" key (the ASCII-armored OpenPGP private key); for an SSH key in "identity" set signingKey.type: ssh`,
      );
      const tokenPath = ['spec', 'git', 'push', 'pullRequest', 'secretRef', 'name'];
      add(tokenPath, 'Secret', undefined, (s) =>
        'token' in keys(s)
          ? undefined
          : `Secret ${secretName(tokenPath)} has no "token" key; pullRequest needs the forge's API token there`,
      );
      break;
    }
    case 'GitRepository': {
      const url = str(raw, ['spec', 'url']) ?? '';
      const ssh = /^ssh:\/\//i.test(url) || /^[^@/:]+@[^:/]+:/.test(url);
      const http = /^https?:\/\//i.test(url);
      if (http && /^https?:\/\/[^/?#@]*:[^/?#@]*@/i.test(url))
        warn(
          ['spec', 'url'],
          "spec.url has a password written into the URL; pawl keeps it out of the workspace's .git/config and out of messages, but it stays in this file: put username and password in a Secret named by spec.secretRef instead",
        );
      add(['spec', 'secretRef', 'name'], 'Secret', undefined, (s) => {
        const k = keys(s);
        const name = secretName(['spec', 'secretRef', 'name']);
        if (ssh && !('identity' in k))
          return `Secret ${name} has no "identity" key; an SSH URL needs the private key in identity (and known_hosts)`;
        if (http && !('bearerToken' in k) && !('username' in k && 'password' in k)) {
          return `Secret ${name} needs username and password, or bearerToken, for an HTTP(S) URL`;
        }
        return undefined;
      });
      break;
    }
    case 'Receiver': {
      add(['spec', 'secretRef', 'name'], 'Secret', undefined, (s) =>
        'token' in keys(s)
          ? undefined
          : `Secret ${secretName(['spec', 'secretRef', 'name'])} has no "token" key; a Receiver needs one (data.token or stringData.token)`,
      );
      const resources = valueAt(raw, ['spec', 'resources']);
      if (Array.isArray(resources)) {
        resources.forEach((_, i) => {
          const kind = str(raw, ['spec', 'resources', i, 'kind']);
          if (kind === undefined) return;
          if (!RECEIVER_TARGETS.has(kind)) {
            warn(['spec', 'resources', i, 'kind'], `pawl does not act on ${kind}; this resource is ignored`);
            return;
          }
          if (str(raw, ['spec', 'resources', i, 'name']) === '*') return;
          add(['spec', 'resources', i, 'name'], kind as Kind, ['spec', 'resources', i, 'namespace']);
        });
      }
      break;
    }
    case 'Provider': {
      const type = str(raw, ['spec', 'type']);
      const address = str(raw, ['spec', 'address']);
      const secretPath = ['spec', 'secretRef', 'name'];
      add(secretPath, 'Secret', undefined, (s) => {
        const k = keys(s);
        const name = secretName(secretPath);
        if (address === undefined && !('address' in k))
          return `Secret ${name} has no "address" key and spec.address is empty; put the webhook URL in one of them`;
        if (type === 'generic-hmac' && !('token' in k))
          return `Secret ${name} has no "token" key; a generic-hmac Provider signs with it`;
        const headers = k.headers && providerHeaders(k.headers.toString('utf8'));
        if (headers && !headers.ok) return `Secret ${name} key "headers": ${headers.problem}`;
        return undefined;
      });
      add(['spec', 'certSecretRef', 'name'], 'Secret', undefined, (s) => {
        const k = keys(s);
        return 'ca.crt' in k || 'tls.crt' in k || 'caFile' in k
          ? undefined
          : `Secret ${secretName(['spec', 'certSecretRef', 'name'])} has none of ca.crt, tls.crt/tls.key; put the receiver's CA in ca.crt`;
      });
      break;
    }
    case 'Alert': {
      add(['spec', 'providerRef', 'name'], 'Provider');
      const sources = valueAt(raw, ['spec', 'eventSources']);
      if (Array.isArray(sources)) {
        sources.forEach((_, i) => {
          const kind = str(raw, ['spec', 'eventSources', i, 'kind']);
          if (kind === undefined) return;
          if (!(EVENT_OBJECT_KINDS as readonly string[]).includes(kind)) {
            warn(
              ['spec', 'eventSources', i, 'kind'],
              `pawl sends no events about ${kind}; this source matches nothing (pawl's are ${EVENT_OBJECT_KINDS.join(', ')})`,
            );
            return;
          }
          if (str(raw, ['spec', 'eventSources', i, 'name']) === '*') return;
          // Flux accepts an Alert for an object that does not exist yet: a warning, not an error.
          add(
            ['spec', 'eventSources', i, 'name'],
            kind as Kind,
            ['spec', 'eventSources', i, 'namespace'],
            undefined,
            'warning',
          );
        });
      }
      break;
    }
    case 'Secret':
      break;
  }
  return refs;
}

/**
 * References between objects: each must name an object that exists (in the same namespace
 * unless the field allows another). An object that failed its own validation is not
 * reported a second time as missing.
 */
export function checkReferences(
  config: Config,
  loaded: Loaded[],
  invalid: Set<string>,
  encrypted: Set<string>,
  /** Where else a Secret was looked for, in words (`--secrets-dir`, the environment). */
  lookedFor: (ref: { namespace: string; name: string }) => string = () => 'looked in the -c files',
  /** A file that defines the missing object but is not applied, and how to include it. */
  elsewhere: (ref: { kind: Kind; namespace: string; name: string }) => string | undefined = () => undefined,
): Problem[] {
  const problems: Problem[] = [];
  // pawl never clones a GitRepository that no automation uses: its Secret is not needed.
  const usedGit = new Set<string>();
  for (const l of loaded) {
    if (l.kind !== 'ImageUpdateAutomation') continue;
    const name = str(l.raw, ['spec', 'sourceRef', 'name']);
    if (name) usedGit.add(`${str(l.raw, ['spec', 'sourceRef', 'namespace']) ?? l.namespace}/${name}`);
  }
  const names = new Map<Kind, Set<string>>();
  for (const l of loaded) {
    let set = names.get(l.kind);
    if (!set) names.set(l.kind, (set = new Set()));
    set.add(`${l.namespace}/${l.name}`);
  }
  const namesOf = (kind: Kind): Set<string> => names.get(kind) ?? new Set();
  for (const l of loaded) {
    const object = `${l.kind} ${l.namespace}/${l.name}`;
    const report = (path: PropertyKey[], message: string, severity: Problem['severity'] = 'error'): void => {
      problems.push({
        location: { file: l.doc.fileOf?.(path) ?? l.doc.file, line: l.doc.lineOf(path) },
        object,
        severity,
        message,
      });
    };
    for (const r of referencesOf(l, (p, m) => report(p, m, 'warning'), config)) {
      const key = `${r.namespace}/${r.name}`;
      const map = config[CONFIG_MAPS[r.kind]] as Map<string, unknown>;
      const target = map.get(key);
      if (target !== undefined) {
        const wrong = r.needs?.(target);
        if (wrong) report(r.path, wrong);
        continue;
      }
      if (invalid.has(`${r.kind}/${key}`)) continue;
      if (r.kind === 'Secret') {
        const unused = l.kind === 'GitRepository' && !usedGit.has(`${l.namespace}/${l.name}`);
        const what = encrypted.has(key)
          ? `Secret ${key} is SOPS-encrypted in the -c files and pawl cannot decrypt it`
          : `Secret ${key} not found`;
        const there = elsewhere(r);
        report(
          r.path,
          `${what}; ${lookedFor(r)}${there ? `. ${there}` : ''}${unused ? '. No ImageUpdateAutomation uses this GitRepository, so pawl does not need it' : '. Give pawl the Secret with --secrets-dir or the environment (see docs/configuration.md)'}`,
          unused ? 'warning' : 'error',
        );
        continue;
      }
      const near = closest(key, namesOf(r.kind), 3);
      const hint = near.length ? ` Did you mean ${near.join(', ')}?` : '';
      const there = elsewhere(r);
      report(
        r.path,
        there
          ? `${r.kind} ${key} not found: ${there}`
          : `${r.kind} ${key} not found.${hint} Define it or fix the name.`,
        r.missing,
      );
    }
    if (l.obj?.kind === 'ImageUpdateAutomation' && selectPolicies(config, l.obj).length === 0) {
      const selector = l.obj.spec.policySelector;
      report(
        selector ? ['spec', 'policySelector'] : ['spec'],
        selector
          ? `policySelector matches no ImagePolicy in namespace ${l.namespace}; this automation will change nothing`
          : `there is no ImagePolicy in namespace ${l.namespace}; this automation will change nothing`,
        'warning',
      );
    }
  }
  return problems;
}

const NAME = ['metadata', 'name'];

/**
 * Flux's hook path is the hash of token, name and namespace concatenated, so two Receivers whose
 * concatenations are equal (`c/ab` and `bc/a` with one token) get one path, and one of them would
 * silently receive the other's events. Each is an error that names the other.
 */
export function checkHookPaths(config: Config, loaded: readonly Loaded[]): Problem[] {
  const byKey = new Map<string, Loaded[]>();
  for (const l of loaded) {
    if (l.obj?.kind !== 'Receiver') continue;
    const token = config.secrets.get(`${l.namespace}/${l.obj.spec.secretRef}`)?.data.token;
    if (!token || token.length === 0) continue;
    const key = token.toString('utf8') + l.name + l.namespace;
    byKey.set(key, [...(byKey.get(key) ?? []), l]);
  }
  const where = (l: Loaded) => ({
    file: l.doc.fileOf?.(NAME) ?? l.doc.file,
    line: l.doc.lineOf(NAME),
  });
  const problems: Problem[] = [];
  for (const same of byKey.values()) {
    if (same.length < 2) continue;
    for (const l of same) {
      const others = same
        .filter((o) => o !== l)
        .map((o) => `Receiver ${o.namespace}/${o.name} (${where(o).file}:${where(o).line})`);
      problems.push({
        location: where(l),
        object: `Receiver ${l.namespace}/${l.name}`,
        severity: 'error',
        message: `this Receiver has the same hook path as ${others.join(', ')}: the path is the hash of token, name and namespace written together, which are equal here, so one would receive the other's events; give one of them a Secret with another token`,
      });
    }
  }
  return problems;
}
