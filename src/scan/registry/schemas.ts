/**
 * What the registry client accepts of a registry's answers: the media types it asks for and the
 * zod schemas of tag pages, token answers, manifests, indexes and image configs. Beside the
 * client that reads them (tags.ts, auth.ts, manifests.ts), as Renovate keeps a datasource's schema.
 */
import { z } from 'zod';

export const MEDIA = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerSchema1Signed: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  dockerSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
} as const;

/** The `Accept` of every manifest request: each kind of manifest the build-time reader understands. */
export const MANIFEST_ACCEPT = [
  MEDIA.ociIndex,
  MEDIA.ociManifest,
  MEDIA.dockerList,
  MEDIA.dockerManifest,
  MEDIA.dockerSchema1Signed,
  MEDIA.dockerSchema1,
].join(', ');

/** Entries are checked one by one (isValidTag), so that one bad entry drops itself, not the page. */
export const tagPage = z.object({ name: z.string(), tags: z.array(z.unknown()).nullable().optional() });

/** What zod found wrong with a page that is JSON, in words ("tags" is a string, not a list). */
export function shapeProblem(err: z.ZodError): string {
  const issue = err.issues[0];
  if (!issue) return 'not a tag list';
  const path = issue.path.length > 0 ? `"${issue.path.join('.')}"` : 'the page';
  return `${path}: ${issue.message}`;
}

/**
 * The token service's answer (Docker's token spec, and OAuth2's for the refresh-token grant):
 * any field may be missing; that `token` or `access_token` is there is checked by the reader.
 */
export const tokenAnswer = z
  .object({
    token: z.string(),
    access_token: z.string(),
    expires_in: z.number(),
    issued_at: z.string(),
    refresh_token: z.string(),
  })
  .partial();
export type TokenAnswer = z.infer<typeof tokenAnswer>;

export const descriptor = z.object({
  mediaType: z.string().optional(),
  digest: z.string(),
  platform: z
    .object({
      architecture: z.string().optional(),
      os: z.string().optional(),
      variant: z.string().optional(),
    })
    .optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type Descriptor = z.infer<typeof descriptor>;

/** An image manifest, an index (OCI) or list (Docker), or a Docker schema 1 manifest. */
export const manifestDoc = z.object({
  mediaType: z.string().optional(),
  schemaVersion: z.number().optional(),
  config: descriptor.optional(),
  manifests: z.array(descriptor).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  history: z.array(z.object({ v1Compatibility: z.string() })).optional(),
});
export type ManifestDoc = z.infer<typeof manifestDoc>;

export const configDoc = z.object({
  created: z.string().optional(),
  config: z
    .object({ Labels: z.record(z.string(), z.string()).nullable().optional() })
    .nullable()
    .optional(),
});
export type ConfigDoc = z.infer<typeof configDoc>;
