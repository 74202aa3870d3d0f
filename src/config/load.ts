import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { ConfigError, type Problem } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { formatProblem } from '../util/errors.js';
import { checkReferences, type Loaded } from './check.js';
import { configFiles } from './files.js';
import { fieldWarnings, issueMessage } from './issues.js';
import { GIT_API_VERSIONS, gitRepositorySchema } from './schema/gitrepository.js';
import { imagePolicySchema } from './schema/imagepolicy.js';
import { IMAGE_API_VERSIONS, imageRepositorySchema } from './schema/imagerepository.js';
import { imageUpdateAutomationSchema } from './schema/imageupdateautomation.js';
import { RECEIVER_API_VERSIONS, receiverSchema } from './schema/receiver.js';
import { secretSchema } from './schema/secret.js';
import { alertSchema, NOTIFICATION_API_VERSIONS, providerSchema } from './schema/notification.js';
import { parseDocuments, type SourceDoc } from './yaml-source.js';
import type { Config, Kind, PawlObject } from './types.js';

interface KindInfo {
  apiVersions: readonly string[];
  schema: z.ZodType;
  map: keyof Config;
}

const KINDS: Record<Kind, KindInfo> = {
  ImageRepository: {
    apiVersions: IMAGE_API_VERSIONS,
    schema: imageRepositorySchema,
    map: 'imageRepositories',
  },
  ImagePolicy: { apiVersions: IMAGE_API_VERSIONS, schema: imagePolicySchema, map: 'imagePolicies' },
  ImageUpdateAutomation: {
    apiVersions: IMAGE_API_VERSIONS,
    schema: imageUpdateAutomationSchema,
    map: 'automations',
  },
  GitRepository: { apiVersions: GIT_API_VERSIONS, schema: gitRepositorySchema, map: 'gitRepositories' },
  Receiver: { apiVersions: RECEIVER_API_VERSIONS, schema: receiverSchema, map: 'receivers' },
  Secret: { apiVersions: ['v1'], schema: secretSchema, map: 'secrets' },
  Provider: { apiVersions: NOTIFICATION_API_VERSIONS, schema: providerSchema, map: 'providers' },
  Alert: { apiVersions: NOTIFICATION_API_VERSIONS, schema: alertSchema, map: 'alerts' },
};

export const KIND_NAMES = Object.keys(KINDS) as Kind[];

/** Which map of `Config` holds objects of a kind. */
export function configMapOf(kind: Kind): keyof Config {
  return KINDS[kind].map;
}

export function emptyConfig(): Config {
  return {
    imageRepositories: new Map(),
    imagePolicies: new Map(),
    automations: new Map(),
    gitRepositories: new Map(),
    receivers: new Map(),
    secrets: new Map(),
    providers: new Map(),
    alerts: new Map(),
  };
}

const group = (apiVersion: string): string =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';

// Only files that name one of pawl's kinds (YAML or JSON spelling) are parsed at all: a Flux
// repository is mostly Deployments and Kustomizations, and parsing is the expensive part.
// Such a file failing to parse is an error; a kubectl List that fails only gets a warning.
const MENTIONS_PAWL_KIND =
  /\bkind["']?\s*:\s*["']?(ImageRepository|ImagePolicy|ImageUpdateAutomation|GitRepository|Receiver|Secret|Provider|Alert)\b/;
const MENTIONS_LIST = /\bkind["']?\s*:\s*["']?List\b/;

export interface LoadResult {
  config: Config;
  /** Every problem found, errors and warnings, in file order. */
  problems: Problem[];
}

/**
 * Reads every object from the `-c` paths, validates and defaults it, and checks the references
 * between objects. Never stops at the first problem. Throws only UsageError (no paths, a path
 * that does not exist); unreadable files are problems.
 */
export async function loadConfig(paths: string[]): Promise<LoadResult> {
  const files = await configFiles(paths);
  const problems: Problem[] = [];
  const config = emptyConfig();
  const loaded: Loaded[] = [];
  /** `Kind/ns/name` of objects that failed validation: references to them are not reported again. */
  const invalid = new Set<string>();
  /** `ns/name` of SOPS-encrypted Secrets, which pawl cannot read. */
  const encrypted = new Set<string>();

  const texts = readAll(files);
  for (const [i, file] of files.entries()) {
    let text: string;
    try {
      text = await texts[i]!;
    } catch (err) {
      problems.push({
        location: { file },
        severity: 'error',
        message: `cannot read: ${(err as Error).message}`,
      });
      continue;
    }
    const ours = MENTIONS_PAWL_KIND.test(text);
    if (!ours && !MENTIONS_LIST.test(text)) continue;
    const { docs, errors } = parseDocuments(file, text);
    const parseSeverity = ours ? 'error' : 'warning';
    // Outside pawl's objects one warning per file is enough.
    for (const e of parseSeverity === 'error' ? errors : errors.slice(0, 1)) {
      problems.push({
        location: { file, line: e.line },
        severity: parseSeverity,
        message:
          parseSeverity === 'error'
            ? `not valid YAML: ${e.message}`
            : `not valid YAML (${e.message}); skipped`,
      });
    }
    for (const doc of docs) loadDocument(doc, { config, problems, loaded, invalid, encrypted });
  }
  problems.push(...checkReferences(config, loaded, invalid, encrypted));
  return { config, problems: sortProblems(problems) };
}

/**
 * `loadConfig`, then throws ConfigError when any problem is an error; warnings are logged
 * (when a logger is given) and returned.
 */
export async function loadConfigOrThrow(
  paths: string[],
  log?: Logger,
): Promise<{ config: Config; warnings: Problem[] }> {
  const { config, problems } = await loadConfig(paths);
  if (problems.some((p) => p.severity === 'error')) throw new ConfigError(problems);
  for (const w of problems) log?.warn(formatProblem(w));
  return { config, warnings: problems };
}

interface Sink {
  config: Config;
  problems: Problem[];
  loaded: Loaded[];
  invalid: Set<string>;
  encrypted: Set<string>;
}

function loadDocument(doc: SourceDoc, sink: Sink): void {
  const v = doc.value;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return;
  const raw = v as Record<string, unknown>;
  // A kubectl List: its items are objects too.
  if (raw.kind === 'List' && raw.apiVersion === 'v1' && Array.isArray(raw.items)) {
    raw.items.forEach((item, i) =>
      loadDocument(
        {
          ...doc,
          value: item,
          lineOf: (p) => doc.lineOf(['items', i, ...p]),
          line: doc.lineOf(['items', i]),
        },
        sink,
      ),
    );
    return;
  }
  const { kind, apiVersion } = raw;
  if (typeof kind !== 'string' || typeof apiVersion !== 'string' || !(kind in KINDS)) return;
  const info = KINDS[kind as Kind];
  const meta = (raw.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const ns = typeof meta.namespace === 'string' ? meta.namespace : 'default';
  const name = typeof meta.name === 'string' ? meta.name : '?';
  const object = `${kind} ${ns}/${name}`;
  const problem = (
    path: readonly PropertyKey[],
    message: string,
    severity: Problem['severity'] = 'error',
  ): void => {
    sink.problems.push({ location: { file: doc.file, line: doc.lineOf(path) }, object, severity, message });
  };

  if (!info.apiVersions.includes(apiVersion)) {
    // Same kind name in another API group (another project's CRD) is none of pawl's business.
    const ourGroups = new Set(info.apiVersions.map(group));
    if (ourGroups.has(group(apiVersion))) {
      problem(
        ['apiVersion'],
        `apiVersion ${apiVersion} is not supported for ${kind}; use one of ${info.apiVersions.join(', ')}`,
      );
      sink.invalid.add(`${kind}/${ns}/${name}`);
    }
    return;
  }
  if (kind === 'Secret' && raw.sops !== null && typeof raw.sops === 'object') {
    problem(
      [],
      'is SOPS-encrypted; pawl cannot read it and skips it (give pawl a decrypted copy if it needs this Secret)',
      'warning',
    );
    sink.encrypted.add(`${ns}/${name}`);
    return;
  }

  for (const w of fieldWarnings(info.schema, raw, kind)) problem(w.path, w.message, 'warning');
  const parsed = info.schema.safeParse(raw);
  const entry: Loaded = { kind: kind as Kind, namespace: ns, name, raw, doc };
  sink.loaded.push(entry);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problem(issue.path, issueMessage(issue, raw));
    sink.invalid.add(`${kind}/${ns}/${name}`);
    return;
  }
  const obj = { ...(parsed.data as object), source: { file: doc.file, line: doc.line } } as PawlObject;
  const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
  const map = sink.config[info.map] as Map<string, PawlObject>;
  const first = map.get(key);
  if (first) {
    problem(
      ['metadata', 'name'],
      `${kind} ${key} is defined twice (first at ${first.source.file}:${first.source.line}); rename or remove one`,
    );
    return;
  }
  map.set(key, obj);
  entry.obj = obj;
}

function sortProblems(problems: Problem[]): Problem[] {
  return problems
    .map((p, i) => ({ p, i }))
    .sort(
      (a, b) =>
        (a.p.location.file < b.p.location.file ? -1 : a.p.location.file > b.p.location.file ? 1 : 0) ||
        (a.p.location.line ?? 0) - (b.p.location.line ?? 0) ||
        a.i - b.i,
    )
    .map((x) => x.p);
}

/**
 * Starts reading every file, at most `limit` at a time, and returns their texts in order: on a
 * slow or network filesystem the reads overlap instead of queueing one by one.
 */
function readAll(files: string[], limit = 32): Promise<string>[] {
  let next = 0;
  const results = files.map(() => {
    let resolve!: (s: string) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Errors are collected by the caller when it awaits; mark them handled meanwhile.
    promise.catch(() => undefined);
    return { promise, resolve, reject };
  });
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const i = next++;
      try {
        results[i]!.resolve(await readFile(files[i]!, 'utf8'));
      } catch (err) {
        results[i]!.reject(err);
      }
    }
  };
  for (let w = 0; w < Math.min(limit, files.length); w++) void worker();
  return results.map((r) => r.promise);
}
