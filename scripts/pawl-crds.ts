/**
 * Writes pawl's CRDs (deploy/kubernetes/crds/) from Flux's: the `v1` schema of each image kind,
 * under the group `image.pawl.dev` and version `v1alpha1`, plus pawl's own fields (SPEC §4:
 * `spec.guard`, `spec.policy.newestBuild`). Status, the status subresource and the printer
 * columns are Flux's, so `kubectl get` and `flux`-style tools read both alike. Short names are
 * left out: Flux's (`imgpol`, …) would become ambiguous.
 *
 *   node --import tsx scripts/pawl-crds.ts [FLUX_CRDS_DIR]      (default $PAWL_FLUX_CRDS, else ../shared/conformance/flux/crds)
 *   node --import tsx scripts/pawl-crds.ts --check              fail when the files are not current
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const check = args.includes('--check');
const fluxDir =
  args.find((a) => !a.startsWith('--')) ??
  process.env.PAWL_FLUX_CRDS ??
  resolve(root, '../shared/conformance/flux/crds');
const outDir = join(root, 'deploy/kubernetes/crds');
const GROUP = 'image.pawl.dev';
const VERSION = 'v1alpha1';

type Json = Record<string, unknown>;

const guard: Json = {
  description:
    "pawl's guard (SPEC §4): what pawl refuses to write. Absent, the defaults: downgrades are blocked, order is the policy's, manual edits are respected.",
  type: 'object',
  properties: {
    downgrades: {
      description:
        'Block keeps a value when the candidate is lower than the highest value pawl wrote; Allow writes it.',
      type: 'string',
      enum: ['Block', 'Allow'],
      default: 'Block',
    },
    compare: {
      description: "How 'lower' is decided: by the policy's order, or by the images' build time.",
      type: 'string',
      enum: ['Policy', 'BuildTime'],
      default: 'Policy',
    },
    manualEdits: {
      description: 'Respect keeps a value a person wrote over the marker; Override writes the candidate.',
      type: 'string',
      enum: ['Respect', 'Override'],
      default: 'Respect',
    },
    staleScan: {
      description:
        'A scan that lost the current tag must be confirmed this many times, within the window, before pawl acts on it.',
      type: 'object',
      properties: {
        confirmations: { type: 'integer', minimum: 1, default: 3 },
        window: { type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$', default: '15m' },
      },
    },
    verifyCandidate: {
      description: 'The candidate must exist in the registry (a HEAD of its manifest) before it is written.',
      type: 'boolean',
      default: true,
    },
    minimumAge: {
      description:
        'Gate (docs/gates.md): a tag pawl first saw less than this long ago is not written yet (too-new).',
      type: 'string',
      pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$',
    },
    window: {
      description: 'Gate (docs/gates.md): writes only inside the window (outside-window).',
      type: 'object',
      required: ['schedule'],
      properties: {
        schedule: { description: 'Five-field cron: the minutes on which the window opens.', type: 'string' },
        timeZone: { description: 'IANA time zone of the schedule.', type: 'string', default: 'UTC' },
        duration: {
          description: 'How long the window stays open after each matching minute.',
          type: 'string',
          pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$',
          default: '1m',
        },
      },
    },
  },
};

const digest: Json = {
  description: "pawl's: which digest a digest reflection writes (docs/gates.md).",
  type: 'object',
  properties: {
    platform: {
      description: "One platform's manifest digest instead of the index's: os/architecture[/variant].",
      type: 'string',
    },
  },
};

const verify: Json = {
  description:
    "pawl's gate (docs/gates.md), in the shape of Flux's OCIRepository.spec.verify: only tags whose digest a trusted key or identity signed are candidates.",
  type: 'object',
  properties: {
    provider: { type: 'string', enum: ['cosign'], default: 'cosign' },
    secretRef: {
      description: 'A Secret in the same namespace whose keys ending in .pub are PEM public keys.',
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' } },
    },
    matchOIDCIdentity: {
      description:
        'Keyless: the certificate issuer and subject must match one pair (RE2, anchored); needs trustedRootSecretRef.',
      type: 'array',
      items: {
        type: 'object',
        required: ['issuer', 'subject'],
        properties: { issuer: { type: 'string' }, subject: { type: 'string' } },
      },
    },
    trustedRootSecretRef: {
      description:
        "pawl's: a Secret in the same namespace whose key trusted_root.json is the Sigstore trusted root keyless signatures are checked against, offline.",
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' } },
    },
  },
};

const newestBuild: Json = {
  description: "pawl's: the tag whose image was built last (its config's created time).",
  type: 'object',
};

const pullRequest: Json = {
  description:
    "pawl's (docs/pull-requests.md): propose the pushed branch as a pull request on GitHub, GitLab or Gitea/Forgejo.",
  type: 'object',
  required: ['secretRef'],
  properties: {
    provider: {
      description: "The forge; absent, known from the GitRepository URL's host (github.com, gitlab.com).",
      type: 'string',
      enum: ['github', 'gitlab', 'gitea'],
    },
    apiURL: {
      description:
        "The forge API's base URL (GitHub Enterprise, self-managed GitLab, Gitea under a sub-path).",
      type: 'string',
    },
    secretRef: {
      description: "A Secret in the automation's namespace whose key `token` holds the API token.",
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' } },
    },
    title: {
      description: "A template over the commit message's data; default its first line.",
      type: 'string',
    },
    body: {
      description: "A template over the commit message's data; default its other lines.",
      type: 'string',
    },
    labels: { type: 'array', items: { type: 'string' } },
    draft: { type: 'boolean', default: false },
  },
};

/** Flux's CRD turned into pawl's: one version, v1alpha1, with pawl's fields. */
function pawlCrd(flux: Json): Json {
  const spec = flux.spec as Json;
  const names = { ...(spec.names as Json) };
  delete names.shortNames;
  names.categories = ['pawl', 'pawl-images'];
  const v1 = (spec.versions as Json[]).find((v) => v.name === 'v1');
  if (!v1) throw new Error(`${String((flux.metadata as Json).name)}: no v1 version in Flux's CRD`);
  const version = structuredClone(v1);
  version.name = VERSION;
  version.served = true;
  version.storage = true;
  delete version.deprecated;
  delete version.deprecationWarning;
  const schema = (version.schema as Json).openAPIV3Schema as Json;
  schema.description = `${String(names.kind)} of pawl (image.pawl.dev): Flux's image.toolkit.fluxcd.io/v1 schema plus pawl's fields.`;
  const specSchema = (schema.properties as Json).spec as Json;
  const props = specSchema.properties as Json;
  if (names.kind === 'ImagePolicy') {
    props.guard = guard;
    props.digest = digest;
    props.verify = verify;
    const policy = props.policy as Json;
    (policy.properties as Json).newestBuild = newestBuild;
  }
  if (names.kind === 'ImageUpdateAutomation') {
    const git = props.git as Json;
    const push = (git.properties as Json).push as Json;
    (push.properties as Json).pullRequest = pullRequest;
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${String(names.plural)}.${GROUP}`,
      annotations: { 'pawl.dev/generated-from': String((flux.metadata as Json).name) },
    },
    spec: { group: GROUP, names, scope: spec.scope, versions: [version] },
  };
}

const HEADER =
  "# Generated by scripts/pawl-crds.ts from Flux's CRDs (Apache-2.0, The Flux authors); do not edit.\n";

let stale = false;
mkdirSync(outDir, { recursive: true });
for (const plural of ['imagerepositories', 'imagepolicies', 'imageupdateautomations']) {
  const flux = parse(readFileSync(join(fluxDir, `image.toolkit.fluxcd.io_${plural}.yaml`), 'utf8')) as Json;
  const text = HEADER + '---\n' + stringify(pawlCrd(flux), { lineWidth: 0 });
  const file = join(outDir, `${GROUP}_${plural}.yaml`);
  if (check) {
    if (!existsSync(file) || readFileSync(file, 'utf8') !== text) {
      console.error(`${file} is not what scripts/pawl-crds.ts writes; run it`);
      stale = true;
    }
  } else writeFileSync(file, text);
}
if (stale) process.exit(1);
