/** The parts of Gitea's (and Forgejo's) API answers pawl reads (swagger: PullRequest, Label). */
import { z } from 'zod';
import { commentId, pullBase } from './pull-schema.js';

export const giteaLabel = z.object({ id: z.number(), name: z.string() });
export const giteaLabels = z.array(giteaLabel);

export const giteaPull = pullBase.extend({ merged: z.boolean().nullish() });
export const giteaPulls = z.array(giteaPull);
export type GiteaPull = z.output<typeof giteaPull>;

export const giteaComment = commentId;
