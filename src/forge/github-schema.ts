/** The parts of GitHub's REST answers pawl reads (OpenAPI: pull-request, pull-request-simple, label). */
import { z } from 'zod';

export const githubLabel = z.object({ name: z.string() });
export const githubLabels = z.array(githubLabel);

export const githubPull = z.object({
  number: z.number(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  merged_at: z.string().nullish(),
  title: z.string(),
  body: z.string().nullish(),
  labels: z.array(githubLabel).nullish(),
  head: z.object({ ref: z.string() }),
  base: z.object({ ref: z.string() }),
});
export const githubPulls = z.array(githubPull);
export type GithubPull = z.output<typeof githubPull>;

export const githubComment = z.object({ id: z.number() });
