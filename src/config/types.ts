/**
 * The configuration objects pawl acts on, after validation and defaulting (SPEC §2).
 * The loader (src/config/load.ts) is the only producer; everything else reads these
 * exact shapes. Durations are milliseconds. Namespaces default to `default`, as kubectl does.
 */
import { nameKey, type Location } from '../util/index.js';

export interface ObjectRef {
  namespace: string;
  name: string;
}

/** `namespace/name`, the way objects are named on the command line and in reports; one copy of each. */
export function refKey(ref: ObjectRef): string {
  return nameKey(ref.namespace, ref.name);
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
    /**
     * Flux's: `generic` reads `secretRef` or the Docker config; `aws`, `gcp`, `azure` get a token
     * from the cloud identity of the machine pawl runs on (then `secretRef` is not used, as in Flux).
     */
    provider: 'generic' | 'aws' | 'gcp' | 'azure';
    /** Who may refer to this repository from another namespace (Flux's ACL); absent: nobody. */
    accessFrom?: AccessFrom;
  };
}

/**
 * Flux's `acl.AccessFrom`. A policy in another namespace may use the repository when the labels
 * of the policy's namespace match any selector; an empty selector matches every namespace.
 */
export interface AccessFrom {
  namespaceSelectors: { matchLabels: Record<string, string> }[];
}

/**
 * A `v1` Namespace object found in the configuration: only its labels matter, for `accessFrom`.
 * Kubernetes adds `kubernetes.io/metadata.name` to every namespace; `labels` includes it.
 */
export interface NamespaceInfo {
  name: string;
  labels: Record<string, string>;
  source: Location;
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
  /** Gate: a candidate pawl first saw less than this long ago (ms) is held (`too-new`). */
  minimumAge?: number;
  /** Gate: writes only inside the window (`outside-window`); rollback and release are not held. */
  window?: WriteWindow;
}

export interface WriteWindow {
  /** Five-field cron: the minutes on which the window opens, read in `timeZone`. */
  schedule: string;
  timeZone: string;
  /** How long (ms) the window stays open after each matching minute. */
  duration: number;
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
    /** pawl's: reflect this platform's manifest digest instead of the index's (docs/gates.md). */
    digest?: { platform: { os: string; architecture: string; variant?: string } };
    /** Only meaningful with digestReflectionPolicy Always. */
    interval?: number;
    /** No new selection (Flux 2.7): the markers keep their values, nothing is recorded for it. */
    suspend: boolean;
    guard: GuardSpec;
    /** pawl's gate: only tags signed by a trusted key are candidates (docs/gates.md). */
    verify?: VerifySpec;
  };
}

/** `spec.verify`, in the shape of Flux's `OCIRepository.spec.verify`. */
export interface VerifySpec {
  provider: 'cosign';
  /** A Secret (same namespace) whose keys ending in `.pub` are PEM public keys. */
  secretRef?: string;
  /** Keyless: the certificate's issuer and subject must match one pair (RE2, anchored). */
  matchOIDCIdentity: { issuer: string; subject: string }[];
  /** pawl's: a Secret (same namespace) whose key `trusted_root.json` is a Sigstore trusted root. */
  trustedRootSecretRef?: string;
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
        /** `type` is Flux's: absent means gpg (`git.asc`); ssh reads `identity`. */
        signingKey?: { secretRef: string; type: 'gpg' | 'ssh' };
        messageTemplate?: string;
        messageTemplateValues: Record<string, string>;
        /** pawl's: `pass` (absent), one commit per pass as Flux; `policy`, one per changed policy. */
        group?: 'pass' | 'policy';
        /** pawl's: ms a pass's first change is held so that later ones join its commit (docs/pull-requests.md). */
        batch?: number;
      };
      push?: {
        /** A fixed branch, or a template over Flux's commit-message data (a branch per change). */
        branch?: string;
        refspec?: string;
        options: Record<string, string>;
        pullRequest?: PullRequestSpec;
      };
    };
    update: { path: string; strategy: 'Setters' };
    /** Absent: every ImagePolicy in the automation's namespace. */
    policySelector?: LabelSelector;
  };
}

/** pawl's `spec.git.push.pullRequest`: propose the pushed branch as a pull request. */
export interface PullRequestSpec {
  /** Stated, or known from the GitRepository's host (github.com, gitlab.com). */
  provider?: 'github' | 'gitlab' | 'gitea';
  /** The API's base URL (GitHub Enterprise, self-managed GitLab, Gitea under a sub-path). */
  apiURL?: string;
  /** A Secret in the automation's namespace; its key `token` is the API token. */
  secretRef: string;
  /** Templates over Flux's commit-message data; default the commit message's first line and rest. */
  title?: string;
  body?: string;
  labels: string[];
  draft: boolean;
  /** User names asked to review, and assigned, when the pull request is opened. */
  reviewers: string[];
  assignees: string[];
  /** Merge by itself once the forge's checks pass, where the forge can. */
  autoMerge?: { method: 'merge' | 'squash' | 'rebase' };
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

/** Provider types pawl sends to, with the payloads of Flux's notification-controller. */
export const PROVIDER_TYPES = [
  'generic',
  'generic-hmac',
  'slack',
  'msteams',
  'discord',
  'rocket',
  'googlechat',
] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export interface Provider extends Base<'Provider'> {
  spec: {
    type: ProviderType;
    address?: string;
    channel?: string;
    username?: string;
    /** Secret keys: `address`, `token`, `headers` (YAML map), `proxy`. */
    secretRef?: string;
    /** Secret keys: `ca.crt`, optionally `tls.crt` and `tls.key`. */
    certSecretRef?: string;
    proxy?: string;
    /** Per request; Flux's default 15s. */
    timeout: number;
    suspend: boolean;
  };
}

/** Kinds Flux's Alert `eventSources` accept (CrossNamespaceObjectReference). */
export const ALERT_SOURCE_KINDS = [
  'Bucket',
  'GitRepository',
  'Kustomization',
  'HelmRelease',
  'HelmChart',
  'HelmRepository',
  'ImageRepository',
  'ImagePolicy',
  'ImageUpdateAutomation',
  'OCIRepository',
  'ArtifactGenerator',
  'ExternalArtifact',
] as const;
export type AlertSourceKind = (typeof ALERT_SOURCE_KINDS)[number];
/** The kinds pawl emits events about; sources of other kinds match nothing. */
export const EVENT_OBJECT_KINDS = ['ImageRepository', 'ImagePolicy', 'ImageUpdateAutomation'] as const;

export interface AlertSource {
  kind: AlertSourceKind;
  /** A name or `*`. */
  name: string;
  /** Absent: the Alert's own namespace. */
  namespace?: string;
  matchLabels?: Record<string, string>;
}

export interface Alert extends Base<'Alert'> {
  spec: {
    providerRef: string;
    eventSeverity: 'info' | 'error';
    eventSources: AlertSource[];
    /** RE2 patterns matched against the event message. */
    inclusionList: string[];
    exclusionList: string[];
    summary?: string;
    eventMetadata: Record<string, string>;
    suspend: boolean;
  };
}

export type PawlObject =
  | ImageRepository
  | ImagePolicy
  | ImageUpdateAutomation
  | GitRepository
  | Receiver
  | Secret
  | Provider
  | Alert;
export type Kind = PawlObject['kind'];

/** Everything loaded from `-c` paths, indexed by `namespace/name` per kind. */
export interface Config {
  imageRepositories: Map<string, ImageRepository>;
  imagePolicies: Map<string, ImagePolicy>;
  automations: Map<string, ImageUpdateAutomation>;
  gitRepositories: Map<string, GitRepository>;
  receivers: Map<string, Receiver>;
  secrets: Map<string, Secret>;
  /** Namespace objects by name; not a kind pawl acts on, only read for their labels. */
  namespaces: Map<string, NamespaceInfo>;
  providers: Map<string, Provider>;
  alerts: Map<string, Alert>;
}

/** Which map of `Config` holds the objects of each kind. */
export const CONFIG_MAPS: Record<Kind, keyof Config> = {
  ImageRepository: 'imageRepositories',
  ImagePolicy: 'imagePolicies',
  ImageUpdateAutomation: 'automations',
  GitRepository: 'gitRepositories',
  Receiver: 'receivers',
  Secret: 'secrets',
  Provider: 'providers',
  Alert: 'alerts',
};
