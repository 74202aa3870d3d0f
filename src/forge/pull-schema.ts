/**
 * The parts of a pull request GitHub and Gitea (whose API follows GitHub's) answer alike; each
 * forge's schema (github-schema.ts, gitea-schema.ts) adds how it says "merged".
 */
import { z } from 'zod';

export const labelByName = z.object({ name: z.string() });

export const pullBase = z.object({
  number: z.number(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  title: z.string(),
  body: z.string().nullish(),
  labels: z.array(labelByName).nullish(),
  head: z.object({ ref: z.string() }),
  base: z.object({ ref: z.string() }),
});

export const commentId = z.object({ id: z.number() });
