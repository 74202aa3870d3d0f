/** The parts of Gitea's (and Forgejo's) API answers pawl reads (swagger: PullRequest, Label). */
import { z } from 'zod';

export const giteaLabel = z.object({ id: z.number(), name: z.string() });
export const giteaLabels = z.array(giteaLabel);

export const giteaPull = z.object({
  number: z.number(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  merged: z.boolean().nullish(),
  title: z.string(),
  body: z.string().nullish(),
  labels: z.array(giteaLabel).nullish(),
  head: z.object({ ref: z.string() }),
  base: z.object({ ref: z.string() }),
});
export const giteaPulls = z.array(giteaPull);
export type GiteaPull = z.output<typeof giteaPull>;

export const giteaComment = z.object({ id: z.number() });
