import { dirname } from 'node:path';
import type { z } from 'zod';
import { ConfigError, type Location, type Problem, type Logger, formatProblem } from '../util/index.js';
import { checkHookPaths, checkReferences, referencesOf, type Loaded } from './check.js';
import { findUnread, readInputs, type Wanted } from './inputs.js';
import { kubectlKustomize, type KustomizeBuild } from './kustomize.js';
import { findSecret, secretObject, whereLooked, type SecretSources } from './secrets.js';
import { fieldWarnings, issueMessage } from './issues.js';
import { ownString, ownStrings, type StringPool } from './own.js';
import { GIT_API_VERSIONS, gitRepositorySchema } from './schema/gitrepository.js';
import { imagePolicySchema } from './schema/imagepolicy.js';
import { IMAGE_API_VERSIONS, imageRepositorySchema } from './schema/imagerepository.js';
import { imageUpdateAutomationSchema } from './schema/imageupdateautomation.js';
import { RECEIVER_API_VERSIONS, receiverSchema } from './schema/receiver.js';
import { secretSchema } from './schema/secret.js';
import { NAMESPACE_NAME_LABEL, namespaceSchema } from './schema/namespace.js';
import { skipInvalid, type SkippedObject } from './skip.js';
import { alertSchema, NOTIFICATION_API_VERSIONS, providerSchema } from './schema/notification.js';
import { parseDocuments, type SourceDoc } from './yaml-source.js';
import {
  DEFAULT_LIMITS,
  MENTIONS_PAWL_KIND,
  documentSegments,
  isPawlKind,
  limitWords,
  sizeWords,
  type OversizedDocument,
  type SizeLimits,
} from './limits.js';
import {
  CONFIG_MAPS,
  type Config,
  type Kind,
  type NamespaceInfo,
  type ObjectRef,
  type PawlObject,
} from './types.js';

interface KindInfo {
  apiVersions: readonly string[];
  schema: z.ZodType;
}

const KINDS: Record<Kind, KindInfo> = {
  ImageRepository: {
    apiVersions: IMAGE_API_VERSIONS,
    schema: imageRepositorySchema,
  },
  ImagePolicy: { apiVersions: IMAGE_API_VERSIONS, schema: imagePolicySchema },
  ImageUpdateAutomation: {
    apiVersions: IMAGE_API_VERSIONS,
    schema: imageUpdateAutomationSchema,
  },
  GitRepository: { apiVersions: GIT_API_VERSIONS, schema: gitRepositorySchema },
  Receiver: { apiVersions: RECEIVER_API_VERSIONS, schema: receiverSchema },
  Secret: { apiVersions: ['v1'], schema: secretSchema },
  Provider: { apiVersions: NOTIFICATION_API_VERSIONS, schema: providerSchema },
  Alert: { apiVersions: NOTIFICATION_API_VERSIONS, schema: alertSchema },
};

export const KIND_NAMES = Object.keys(KINDS) as Kind[];

/** Which map of `Config` holds objects of a kind. */
export function configMapOf(kind: Kind): keyof Config {
  return CONFIG_MAPS[kind];
}

export function emptyConfig(): Config {
  return {
    imageRepositories: new Map(),
    imagePolicies: new Map(),
    automations: new Map(),
    gitRepositories: new Map(),
    receivers: new Map(),
    secrets: new Map(),
    namespaces: new Map(),
    providers: new Map(),
    alerts: new Map(),
  };
}

const group = (apiVersion: string): string =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';

// Only documents that name one of pawl's kinds (YAML or JSON spelling) are parsed at all: a
// Flux repository is mostly Deployments and Kustomizations, and parsing is the expensive part.
// Such a document failing to parse is an error; a kubectl List, or a Namespace (read only for
// its labels, for `accessFrom`), that fails only gets a warning.
const MENTIONS_LIST = /\bkind["']?\s*:\s*["']?(List|Namespace)\b/;

export interface LoadResult {
  /** The objects pawl can act on: valid, and needing nothing that is skipped. */
  config: Config;
  /** Every problem found, errors and warnings, in file order. */
  problems: Problem[];
  /** Objects left out of `config`, each with why; in the order they were read. */
  skipped: SkippedObject[];
}

export interface LoadOptions {
  /** Where Secrets that are not in the `-c` files are looked for. */
  secrets?: SecretSources;
  /** Builds a directory with a kustomization file; default `kubectl kustomize DIR`. */
  kustomize?: KustomizeBuild;
  /** Size limits (docs/configuration.md#size-limits); default DEFAULT_LIMITS. */
  limits?: Partial<SizeLimits>;
}

/**
 * How many of pawl's objects a configuration holds (Namespaces, read only for their labels, do
 * not count).
 */
export function objectCount(config: Config): number {
  let n = 0;
  for (const kind of KIND_NAMES) n += config[CONFIG_MAPS[kind]].size;
  return n;
}

/** How many of pawl's objects each file of a configuration holds (by the file of each object's source). */
export function objectsByFile(config: Config): Map<string, number> {
  const out = new Map<string, number>();
  for (const kind of KIND_NAMES)
    for (const o of config[CONFIG_MAPS[kind]].values())
      out.set(o.source.file, (out.get(o.source.file) ?? 0) + 1);
  return out;
}

/**
 * Whether a load left pawl nothing to act on: no object of pawl's kinds is usable. For a daemon
 * deciding whether to take a reload — an empty or truncated file, a checkout caught half-way,
 * would otherwise stop every automation in silence:
 *
 *   const next = await loadConfig(paths);
 *   if (loadedNothing(next) && !loadedNothing(current)) refuse the reload, keep `current`;
 */
export function loadedNothing(result: Pick<LoadResult, 'config'>): boolean {
  return objectCount(result.config) === 0;
}

/**
 * Reads every object from the `-c` paths (see inputs.ts for how a repository is read),
 * validates and defaults it, fills in Secrets from the other sources, checks the references
 * between objects, and leaves out what is invalid or needs something invalid. Never stops at
 * the first problem. Throws only UsageError (no paths, a path that does not exist); unreadable
 * files and failed builds are problems.
 */
export async function loadConfig(paths: string[], opts: LoadOptions = {}): Promise<LoadResult> {
  const limits: SizeLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const { inputs, problems, unread } = await readInputs(
    paths,
    opts.kustomize ?? kubectlKustomize(process.env, limits.buildBytes),
    limits,
  );
  const config = emptyConfig();
  const loaded: Loaded[] = [];
  /** `Kind/ns/name` of objects that failed validation: references to them are not reported again. */
  const invalid = new Set<string>();
  /** `ns/name` of SOPS-encrypted Secrets, which pawl cannot read. */
  const encrypted = new Set<string>();
  const sink: Sink = { config, problems, loaded, invalid, encrypted, strings: new Map() };

  for (const { file, text, mapDoc, oversized } of inputs) {
    for (const o of oversized) oversizedDocument(o, file, !!mapDoc, limits, sink);
    const nothing = oversized.length === 0 ? holdsNothing(text) : undefined;
    if (nothing) {
      problems.push({
        location: { file },
        severity: 'warning',
        message: mapDoc ? `kustomize built nothing from ${dirname(file)}` : nothing,
      });
      continue;
    }
    // Each document on its own, and only those that name a kind pawl reads: the rest of a
    // repository (CRDs, dashboards) is never parsed, so memory follows pawl's objects, not the
    // repository's size. A YAML error cannot cross a `---`, so nothing is lost by it.
    if (!MENTIONS_PAWL_KIND.test(text) && !MENTIONS_LIST.test(text)) continue;
    let warned = false;
    for (const seg of documentSegments(text)) {
      const ours = MENTIONS_PAWL_KIND.test(seg.text);
      if (!ours && !MENTIONS_LIST.test(seg.text)) continue;
      const { docs, errors } = parseDocuments(file, seg.text, seg.line);
      const parseSeverity = ours ? 'error' : 'warning';
      // Outside pawl's objects one warning per file is enough.
      for (const e of parseSeverity === 'error' ? errors : warned ? [] : errors.slice(0, 1)) {
        if (parseSeverity === 'warning') warned = true;
        // A line of kustomize's output means nothing to the user: name the object instead, and
        // when it is one of pawl's, let what needs it be skipped rather than run without it.
        const broken = mapDoc ? objectAround(text, e.line) : undefined;
        const label = broken ? `${broken.kind} ${broken.namespace}/${broken.name}` : undefined;
        problems.push({
          location: mapDoc ? { file } : { file, line: e.line },
          ...(broken && broken.kind in KINDS ? { object: label! } : {}),
          severity: parseSeverity,
          message:
            parseSeverity === 'error'
              ? `not valid YAML${mapDoc ? ` as kustomize built it${label ? ` (${label})` : ''}, after Flux's postBuild substitution if any` : ''}: ${e.message}`
              : `not valid YAML (${e.message}); skipped`,
        });
        if (broken && broken.kind in KINDS && parseSeverity === 'error') placeholder(broken, file, sink);
      }
      for (const doc of docs) loadDocument(mapDoc ? mapDoc(doc) : doc, sink);
    }
  }
  await addOutsideSecrets(loaded, sink, opts.secrets ?? {}, limits);
  const elsewhere = await findUnread(unread, missingReferences(config, loaded), limits);
  problems.push(
    ...checkReferences(
      config,
      loaded,
      invalid,
      encrypted,
      (ref) => whereLooked(ref, opts.secrets ?? {}),
      (ref) => {
        const hit = elsewhere.get(`${ref.kind}/${ref.namespace}/${ref.name}`);
        return (
          hit && `${hit.file} defines it, but Flux does not apply that file from the -c paths: ${hit.include}`
        );
      },
    ),
    ...checkHookPaths(config, loaded),
  );
  const skipped = skipInvalid(config, loaded, problems);
  return { config, problems: sortProblems(problems), skipped };
}

/** The GitRepositories and Secrets that objects name and no object read is. */
function missingReferences(config: Config, loaded: readonly Loaded[]): Wanted[] {
  const out: Wanted[] = [];
  for (const l of loaded) {
    for (const r of referencesOf(l, () => undefined)) {
      if (r.kind !== 'Secret' && r.kind !== 'GitRepository') continue;
      if (!config[CONFIG_MAPS[r.kind]].has(`${r.namespace}/${r.name}`)) out.push(r);
    }
  }
  return out;
}

/**
 * `loadConfig` over objects read from a Kubernetes API server instead of files: each object's
 * location is its `namespace/name`. The same schemas, defaults, reference checks and problems;
 * one broken object is left out with its problem, and what needs it with it.
 */
export async function loadObjects(objects: readonly unknown[], opts: LoadOptions = {}): Promise<LoadResult> {
  const config = emptyConfig();
  const problems: Problem[] = [];
  const loaded: Loaded[] = [];
  const limits: SizeLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const sink: Sink = {
    config,
    problems,
    loaded,
    invalid: new Set(),
    encrypted: new Set(),
    strings: new Map(),
  };
  for (const value of objects) {
    const meta = (value as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
    const file = `${typeof meta?.namespace === 'string' ? meta.namespace : 'default'}/${typeof meta?.name === 'string' ? meta.name : '?'}`;
    loadDocument({ file, line: 0, value, lineOf: () => 0 }, sink);
  }
  await addOutsideSecrets(loaded, sink, opts.secrets ?? {}, limits);
  problems.push(
    ...checkReferences(config, loaded, sink.invalid, sink.encrypted, (ref) =>
      whereLooked(ref, opts.secrets ?? {}),
    ),
    ...checkHookPaths(config, loaded),
  );
  const skipped = skipInvalid(config, loaded, problems);
  return { config, problems: sortProblems(problems), skipped };
}

/**
 * Secrets that objects name and the `-c` files do not hold (or hold only SOPS-encrypted) are
 * taken from `--secrets-dir` or the environment, and then checked like any other Secret.
 */
async function addOutsideSecrets(
  loaded: readonly Loaded[],
  sink: Sink,
  sources: SecretSources,
  limits: SizeLimits,
): Promise<void> {
  if (!sources.dir && !sources.env) return;
  const wanted = new Map<string, ObjectRef>();
  for (const l of loaded) {
    for (const r of referencesOf(l, () => undefined)) {
      if (r.kind !== 'Secret') continue;
      const key = `${r.namespace}/${r.name}`;
      if (sink.config.secrets.has(key) || sink.invalid.has(`Secret/${key}`)) continue;
      wanted.set(key, { namespace: r.namespace, name: r.name });
    }
  }
  for (const [key, ref] of wanted) {
    const found = await findSecret(ref, sources, limits.secretKeyBytes);
    if (!found) continue;
    for (const t of found.tooBig) {
      sink.problems.push({
        location: { file: t.file },
        object: `Secret ${key}`,
        severity: 'error',
        message: `is ${sizeWords(t.bytes)}, over pawl's limit of ${limitWords(limits.secretKeyBytes)} per Secret key; not read (Kubernetes allows 1 MiB per Secret)`,
      });
    }
    sink.encrypted.delete(key);
    const raw = secretObject(ref, found);
    loadDocument({ file: found.origin, line: 0, value: raw, lineOf: () => 0 }, sink);
  }
}

/**
 * `loadConfig`, all or nothing (`--strict`): throws ConfigError when any problem is an error;
 * warnings are logged (when a logger is given) and returned.
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
  /** The load's strings: what a kept object holds is copied once (own.ts). */
  strings: StringPool;
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
  if (kind === 'Namespace' && apiVersion === 'v1') {
    loadNamespace(doc, raw, sink);
    return;
  }
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
    sink.problems.push({
      location: { file: doc.fileOf?.(path) ?? doc.file, line: doc.lineOf(path) },
      object,
      severity,
      message,
    });
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
  // Only a Secret that something names is worth a word (checkReferences says it is encrypted):
  // a fleet holds dozens of encrypted Secrets for other controllers.
  if (kind === 'Secret' && raw.sops !== null && typeof raw.sops === 'object') {
    sink.encrypted.add(`${ns}/${name}`);
    return;
  }

  // Before the schema sees them: what it keeps, and what the semver and regexp caches keep, is
  // then the load's own copy, not a slice of the file.
  ownStrings(sink.strings, raw);
  for (const w of fieldWarnings(info.schema, raw, kind)) problem(w.path, w.message, 'warning');
  const parsed = info.schema.safeParse(raw);
  const entry: Loaded = { kind: kind as Kind, namespace: ns, name, raw, doc };
  sink.loaded.push(entry);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problem(issue.path, issueMessage(issue, raw));
    sink.invalid.add(`${kind}/${ns}/${name}`);
    return;
  }
  const obj = parsed.data as PawlObject;
  // Added to the schema's own object rather than spread into a new one: a spread at this
  // call site, which sees every kind, gave each object a hidden class of its own (~250 bytes).
  obj.source = {
    file: ownString(sink.strings, doc.file),
    line: doc.line,
    ...(doc.via ? { via: ownString(sink.strings, doc.via) } : {}),
  };
  const key = ownString(sink.strings, `${obj.metadata.namespace}/${obj.metadata.name}`);
  const map = sink.config[CONFIG_MAPS[kind as Kind]] as Map<string, PawlObject>;
  const first = map.get(key);
  if (first) {
    // The same object reached twice (two clusters' copies of the bootstrap GitRepository) is
    // one object; two different ones under one name are a conflict, and neither is used.
    if (sameObject(first, obj)) {
      sink.loaded.pop();
      return;
    }
    const place = (l: Location): string =>
      `${l.line ? `${l.file}:${l.line}` : l.file}${l.via ? ` as built from ${l.via}` : ''}`;
    const at = place(first.source);
    const here = obj.source.via ? ` (here as built from ${obj.source.via})` : '';
    problem(
      ['metadata', 'name'],
      `${kind} ${key} is defined twice, differently${here} (also at ${at}); neither is used: rename one, remove one, or point -c at one cluster's directory`,
    );
    return;
  }
  map.set(key, obj);
  entry.obj = obj;
}

/**
 * A Namespace's labels, plus the one Kubernetes sets itself. The same namespace in several
 * files (one per cluster) is fine when the labels agree; otherwise the first one counts.
 */
function loadNamespace(doc: SourceDoc, raw: Record<string, unknown>, sink: Sink): void {
  const parsed = namespaceSchema.safeParse(raw);
  const meta = (raw.metadata ?? {}) as { name?: unknown };
  const object = `Namespace ${typeof meta.name === 'string' ? meta.name : '?'}`;
  const at = (path: readonly PropertyKey[]) => ({ file: doc.file, line: doc.lineOf(path) });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      sink.problems.push({
        location: at(issue.path),
        object,
        severity: 'error',
        message: issueMessage(issue, raw),
      });
    }
    return;
  }
  const { name, labels } = parsed.data.metadata;
  const info: NamespaceInfo = {
    name,
    labels: { ...labels, [NAMESPACE_NAME_LABEL]: name },
    source: { file: doc.file, line: doc.line },
  };
  const first = sink.config.namespaces.get(name);
  if (!first) {
    sink.config.namespaces.set(name, info);
    return;
  }
  const same =
    JSON.stringify(Object.entries(first.labels).sort()) ===
    JSON.stringify(Object.entries(info.labels).sort());
  if (!same) {
    sink.problems.push({
      location: at(['metadata', 'labels']),
      object,
      severity: 'warning',
      message: `Namespace ${name} is also defined at ${first.source.file}:${first.source.line} with other labels; accessFrom is checked against the labels there`,
    });
  }
}

interface Identity {
  kind: string;
  namespace: string;
  name: string;
}

/** Kind, namespace and name of the kustomize-built document around `line`, read off its text. */
function objectAround(text: string, line: number): Identity | undefined {
  const lines = text.split('\n');
  let start = line - 1;
  while (start > 0 && !/^---/.test(lines[start]!)) start--;
  let end = line - 1;
  while (end < lines.length - 1 && !/^---/.test(lines[end + 1]!)) end++;
  const doc = lines.slice(start, end + 1).join('\n');
  const kind = /^kind:\s*(\S+)/m.exec(doc)?.[1];
  const name = /^ {2}name:\s*(\S+)/m.exec(doc)?.[1];
  const namespace = /^ {2}namespace:\s*(\S+)/m.exec(doc)?.[1] ?? 'default';
  return kind && name ? { kind, namespace, name } : undefined;
}

/**
 * Stands in for an object of pawl's whose document could not be parsed: it is invalid, and
 * since its labels are unknown, every automation of its namespace is taken to apply it.
 */
function placeholder(id: Identity, file: string, sink: Sink, line = 0, built = true): void {
  const raw = { kind: id.kind, metadata: { name: id.name, namespace: id.namespace, labels: null } };
  const doc: SourceDoc = {
    file,
    line,
    value: raw,
    lineOf: () => line,
    ...(built ? { via: dirname(file) } : {}),
  };
  sink.loaded.push({ kind: id.kind as Kind, namespace: id.namespace, name: id.name, raw, doc });
  sink.invalid.add(`${id.kind}/${id.namespace}/${id.name}`);
}

/**
 * A document cut out for its size: an error when it is (or may be) one of pawl's objects, which
 * is then skipped with what needs it; a warning for another kind's, which pawl would not read.
 */
function oversizedDocument(
  o: OversizedDocument,
  file: string,
  built: boolean,
  limits: SizeLimits,
  sink: Sink,
): void {
  const kind = o.kind;
  const id =
    isPawlKind(kind) && o.name !== undefined
      ? { kind, namespace: o.namespace ?? 'default', name: o.name }
      : undefined;
  sink.problems.push({
    location: built ? { file } : { file, line: o.line },
    ...(id ? { object: `${id.kind} ${id.namespace}/${id.name}` } : {}),
    severity: o.ours ? 'error' : 'warning',
    message: `document ${o.index}${built ? ' of the build' : ''} is ${sizeWords(o.bytes)}, over pawl's limit of ${limitWords(limits.documentBytes)} per document; not read${o.ours ? '' : ` (a ${kind ?? 'document'} pawl does not use)`}; see docs/configuration.md#size-limits`,
  });
  if (id) placeholder(id, file, sink, built ? 0 : o.line, built);
}

/** Any line that is not blank, a comment, or a document marker. */
const CONTENT = /^(?![ \t]*(?:#|$)|(?:---|\.\.\.)[ \t]*(?:#.*)?$)/m;
/**
 * A `key:` (a colon before a space or the line's end), a `- ` item, a JSON object or list:
 * something that may hold an object. Lenient on purpose, and free of backtracking.
 */
const STRUCTURE = /:(?:[ \t]|$)|^[ \t]*(?:-(?:[ \t]|$)|[{[])/m;

/**
 * Why a text holds no object at all, or undefined when it may: empty, not text, or no mapping
 * anywhere (prose, a bare scalar). Cheap enough for every file: no parsing.
 */
function holdsNothing(text: string): string | undefined {
  if (text.includes('\u0000') || text.includes('\ufffd'))
    return 'is not a text file (binary, or not UTF-8); nothing read from it';
  if (!CONTENT.test(text))
    return 'is empty (nothing but blank lines, comments and ---); nothing read from it';
  if (!STRUCTURE.test(text)) return 'holds no YAML mapping (no key: value line); nothing read from it';
  return undefined;
}

function sameObject(a: PawlObject, b: PawlObject): boolean {
  const { source: _a, ...x } = a;
  const { source: _b, ...y } = b;
  void _a;
  void _b;
  return JSON.stringify(x) === JSON.stringify(y);
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
