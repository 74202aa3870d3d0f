/**
 * The configuration objects pawl acts on, after validation and defaulting (SPEC §2).
 * The loader (src/config/load.ts) is the only producer; everything else reads these
 * exact shapes. Durations are milliseconds. Namespaces default to `default`, as kubectl does.
 */
import type { Location } from '../util/errors.js';

export interface ObjectRef {
  namespace: string;
  name: string;
}

/** `namespace/name`, the way objects are named on the command line and in reports. */
export function refKey(ref: ObjectRef): string {
  return `${ref.namespace}/${ref.name}`;
}

interface Meta {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface Base<K extends string> {
  kind: K;
  apiVersion: string;
  metadata: Meta;
  /** File and line of the object's first line, for every message about it. */
  source: Location;
}

export interface ImageRepository extends Base<'ImageRepository'> {
  spec: {
    /** As written by the user: no scheme, no tag, no digest. */
    image: string;
    interval: number;
    /** Per scan; Flux defaults to 60s. */
    timeout: number;
    secretRef?: string;
    certSecretRef?: string;
    insecure: boolean;
    /** RE2 patterns; Flux's default `["^.*\\.sig$"]`. */
    exclusionList: string[];
    suspend: boolean;
    provider: 'generic';
  };
}

export type PolicyChoice =
  | { strategy: 'semver'; range: string }
  | { strategy: 'alphabetical'; order: 'asc' | 'desc' }
  | { strategy: 'numerical'; order: 'asc' | 'desc' }
  | { strategy: 'newestBuild' };

export interface TagFilter {
  /** Go/RE2 syntax, unanchored. */
  pattern: string;
  /** Go `Regexp.Expand` template; empty means the whole tag. */
  extract: string;
}

export interface GuardSpec {
  downgrades: 'Block' | 'Allow';
  compare: 'Policy' | 'BuildTime';
  manualEdits: 'Respect' | 'Override';
  staleScan: { confirmations: number; window: number };
  verifyCandidate: boolean;
}

export const DEFAULT_GUARD: GuardSpec = {
  downgrades: 'Block',
  compare: 'Policy',
  manualEdits: 'Respect',
  staleScan: { confirmations: 3, window: 15 * 60_000 },
  verifyCandidate: true,
};

export interface ImagePolicy extends Base<'ImagePolicy'> {
  spec: {
    imageRepositoryRef: ObjectRef;
    policy: PolicyChoice;
    filterTags?: TagFilter;
    digestReflectionPolicy: 'Never' | 'IfNotPresent' | 'Always';
    /** Only meaningful with digestReflectionPolicy Always. */
    interval?: number;
    guard: GuardSpec;
  };
}

export interface GitRef {
  branch?: string;
  tag?: string;
  semver?: string;
  name?: string;
  commit?: string;
}

export interface LabelSelector {
  matchLabels: Record<string, string>;
  matchExpressions: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values: string[] }[];
}

export interface ImageUpdateAutomation extends Base<'ImageUpdateAutomation'> {
  spec: {
    sourceRef: ObjectRef & { kind: 'GitRepository' };
    interval: number;
    suspend: boolean;
    git: {
      /** When absent, the GitRepository's own ref is used. */
      checkout?: { ref: GitRef };
      commit: {
        author: { name: string; email: string };
        signingKey?: { secretRef: string };
        messageTemplate?: string;
        messageTemplateValues: Record<string, string>;
      };
      push?: { branch?: string; refspec?: string; options: Record<string, string> };
    };
    update: { path: string; strategy: 'Setters' };
    /** Absent: every ImagePolicy in the automation's namespace. */
    policySelector?: LabelSelector;
  };
}

export interface GitRepository extends Base<'GitRepository'> {
  spec: {
    url: string;
    ref?: GitRef;
    secretRef?: string;
    interval: number;
    timeout: number;
  };
}

export const RECEIVER_TYPES = [
  'generic',
  'generic-hmac',
  'github',
  'gitlab',
  'bitbucket',
  'dockerhub',
  'quay',
  'harbor',
  'nexus',
  'acr',
  'distribution',
] as const;
export type ReceiverType = (typeof RECEIVER_TYPES)[number];

export interface Receiver extends Base<'Receiver'> {
  spec: {
    type: ReceiverType;
    events: string[];
    resources: { kind: string; name: string; namespace?: string; matchLabels?: Record<string, string> }[];
    secretRef: string;
    suspend: boolean;
  };
}

export interface Secret extends Base<'Secret'> {
  type: string;
  /** Decoded values of `data` merged with `stringData` (stringData wins, as in Kubernetes). */
  data: Record<string, Buffer>;
}

export type PawlObject =
  ImageRepository | ImagePolicy | ImageUpdateAutomation | GitRepository | Receiver | Secret;
export type Kind = PawlObject['kind'];

/** Everything loaded from `-c` paths, indexed by `namespace/name` per kind. */
export interface Config {
  imageRepositories: Map<string, ImageRepository>;
  imagePolicies: Map<string, ImagePolicy>;
  automations: Map<string, ImageUpdateAutomation>;
  gitRepositories: Map<string, GitRepository>;
  receivers: Map<string, Receiver>;
  secrets: Map<string, Secret>;
}
