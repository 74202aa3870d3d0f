/** The parts of GitHub's REST answers pawl reads (OpenAPI: pull-request, pull-request-simple, label). */
import { z } from 'zod';
import { commentId, labelByName, pullBase } from './pull-schema.js';

export const githubLabels = z.array(labelByName);

export const githubPull = pullBase.extend({
  merged_at: z.string().nullish(),
  node_id: z.string().optional(),
});
export const githubPulls = z.array(githubPull);
export type GithubPull = z.output<typeof githubPull>;

export const githubComment = commentId;

/** GraphQL answers 200 with `errors` when a mutation fails. */
export const githubGraphql = z.object({
  data: z.unknown().optional(),
  errors: z.array(z.object({ message: z.string() })).optional(),
});
