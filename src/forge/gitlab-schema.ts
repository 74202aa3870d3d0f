/** The parts of GitLab's REST v4 answers pawl reads (OpenAPI: API_Entities_MergeRequest, Note, UserBasic). */
import { z } from 'zod';

export const gitlabMergeRequest = z.object({
  iid: z.number(),
  web_url: z.string(),
  state: z.enum(['opened', 'closed', 'merged', 'locked']),
  title: z.string(),
  description: z.string().nullish(),
  labels: z.array(z.string()).nullish(),
  source_branch: z.string(),
  target_branch: z.string(),
});
export const gitlabMergeRequests = z.array(gitlabMergeRequest);
export type GitlabMergeRequest = z.output<typeof gitlabMergeRequest>;

export const gitlabNote = z.object({ id: z.number() });

export const gitlabUsers = z.array(z.object({ id: z.number(), username: z.string() }));
