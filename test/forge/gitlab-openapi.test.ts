/**
 * pawl's GitLab client against GitLab's own OpenAPI 2.0 description (a verbatim excerpt of
 * doc/api/openapi/openapi_v2.yaml, test/fixtures/forge/): listing, creating, updating, setting
 * reviewers and assignees, auto-merge and closing validate against the file; the user lookup and
 * the comment (not in the file) against GitLab's documented shape. Every answer the stand-in
 * gives validates against the response schema, with the one correction the helper names.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { forgeClient, forgeRepo } from '../../src/forge/index.js';
import {
  gitlabDescription,
  startOpenApiForge,
  type ForgeCall,
  type ForgeDescription,
  type OpenApiForge,
} from '../helpers/openapi-forge.js';

const TOKEN = 'glpat-openapiTOKEN0123456789';

interface Mr {
  iid: number;
  source_branch: string;
  target_branch: string;
  title: string;
  description: string;
  labels: string[];
  state: 'opened' | 'closed' | 'merged';
  reviewer_ids: number[];
  assignee_ids: number[];
  auto_merge: boolean;
}

const USERS = [
  { id: 11, username: 'rita' },
  { id: 12, username: 'ash' },
];

/** An in-memory project answering in GitLab's documented shape. */
function gitlabModel(mrs: Mr[], notes: [number, string][]) {
  const json = (m: Mr) => ({
    id: 1000 + m.iid,
    iid: m.iid,
    project_id: 4,
    title: m.title,
    description: m.description,
    state: m.state,
    source_branch: m.source_branch,
    target_branch: m.target_branch,
    labels: m.labels,
    web_url: `https://gitlab.example.com/group/sub/fleet/-/merge_requests/${m.iid}`,
  });
  return (call: Omit<ForgeCall, 'status'>) => {
    const m = mrs.find((x) => x.iid === Number(call.params.merge_request_iid));
    const body = (call.body ?? {}) as Record<string, unknown>;
    switch (call.operationId) {
      case 'getApiV4ProjectsIdMergeRequests':
        return {
          status: 200,
          body: mrs
            .filter((x) => x.state === call.query.state && x.target_branch === call.query.target_branch)
            .map(json),
        };
      case 'postApiV4ProjectsIdMergeRequests': {
        const created: Mr = {
          iid: Math.max(0, ...mrs.map((x) => x.iid)) + 1,
          source_branch: String(body.source_branch),
          target_branch: String(body.target_branch),
          title: String(body.title),
          description: String(body.description ?? ''),
          labels: (body.labels as string[] | undefined) ?? [],
          state: 'opened',
          reviewer_ids: [],
          assignee_ids: [],
          auto_merge: false,
        };
        mrs.push(created);
        return { status: 201, body: json(created) };
      }
      case 'putApiV4ProjectsIdMergeRequestsMergeRequestIid':
        if (body.title !== undefined) m!.title = String(body.title);
        if (body.description !== undefined) m!.description = String(body.description);
        if (body.labels !== undefined) m!.labels = body.labels as string[];
        if (body.reviewer_ids !== undefined) m!.reviewer_ids = body.reviewer_ids as number[];
        if (body.assignee_ids !== undefined) m!.assignee_ids = body.assignee_ids as number[];
        if (body.state_event === 'close') m!.state = 'closed';
        return { status: 200, body: json(m!) };
      case 'putApiV4ProjectsIdMergeRequestsMergeRequestIidMerge':
        m!.auto_merge = body.auto_merge === true;
        return { status: 200, body: json(m!) };
      case 'docs: GET /users (docs.gitlab.com/api/users)':
        return { status: 200, body: USERS.filter((u) => u.username === call.query.username) };
      default:
        if (call.operationId.startsWith('docs: POST /projects/:id/merge_requests/:merge_request_iid/notes')) {
          notes.push([Number(call.params.merge_request_iid), String(body.body)]);
          return { status: 201, body: { id: 500 + notes.length, body: body.body } };
        }
        return { status: 501, body: { message: `the model has no ${call.operationId}` } };
    }
  };
}

describe("GitLab's OpenAPI description (v2 excerpt)", () => {
  let desc: ForgeDescription;
  let stand: OpenApiForge;
  const mrs: Mr[] = [];
  const notes: [number, string][] = [];
  before(async () => {
    desc = gitlabDescription();
    mrs.push({
      iid: 3,
      source_branch: 'pawl/fleet/app-1.1.0',
      target_branch: 'main',
      title: 'Update app to 1.1.0',
      description: 'x <!-- pawl:automation flux-system/fleet -->',
      labels: [],
      state: 'opened',
      reviewer_ids: [],
      assignee_ids: [],
      auto_merge: false,
    });
    stand = await startOpenApiForge(desc, gitlabModel(mrs, notes));
  });
  after(() => stand?.close());

  test('what the helper changed in GitLab’s file, and what is outside the excerpt, is said', () => {
    assert.ok(
      desc.corrections.some((c) =>
        /^API_Entities_MergeRequest\.labels: the file says \{"type":"string"\}/.test(c),
      ),
    );
    assert.ok(desc.corrections.some((c) => /API_Entities_MergeRequestBasic is outside the excerpt/.test(c)));
  });

  test('find, open as draft with labels, reviewers and assignees by name, update, auto-merge, comment on and close: every request validates', async () => {
    const repo = forgeRepo('https://gitlab.example.com/group/sub/fleet.git', {
      provider: 'gitlab',
      apiURL: `${stand.url}/api/v4`,
    });
    assert.ok(typeof repo !== 'string');
    const forge = forgeClient(repo, { fetch: (u, i) => fetch(u, i), token: TOKEN, sleep: async () => {} });
    const open = await forge.listOpen('main');
    const pr = await forge.open({
      head: 'pawl/fleet/app-1.2.0',
      base: 'main',
      title: 'Update app to 1.2.0',
      body: 'b <!-- pawl:automation flux-system/fleet -->',
      labels: ['images', 'automated'],
      draft: true,
    });
    await forge.addPeople(pr.number, { reviewers: ['rita'], assignees: ['ash'] });
    const updated = await forge.update(pr.number, {
      title: 'Update app to 1.3.0',
      body: 'c',
      labels: ['images'],
    });
    await forge.autoMerge(pr, 'squash');
    await forge.comment(open[0]!.number, 'Superseded. Closed by pawl.');
    await forge.close(open[0]!.number);

    assert.deepEqual(stand.problems, []);
    assert.deepEqual(
      stand.calls.map((c) => [c.source, c.operationId, c.status]),
      [
        ['openapi', 'getApiV4ProjectsIdMergeRequests', 200],
        ['openapi', 'postApiV4ProjectsIdMergeRequests', 201],
        ['docs', 'docs: GET /users (docs.gitlab.com/api/users)', 200],
        ['docs', 'docs: GET /users (docs.gitlab.com/api/users)', 200],
        ['openapi', 'putApiV4ProjectsIdMergeRequestsMergeRequestIid', 200],
        ['openapi', 'putApiV4ProjectsIdMergeRequestsMergeRequestIid', 200],
        ['openapi', 'putApiV4ProjectsIdMergeRequestsMergeRequestIidMerge', 200],
        [
          'docs',
          'docs: POST /projects/:id/merge_requests/:merge_request_iid/notes (docs.gitlab.com/api/notes)',
          201,
        ],
        ['openapi', 'putApiV4ProjectsIdMergeRequestsMergeRequestIid', 200],
      ],
    );
    assert.equal(
      stand.calls[1]!.params.id,
      'group/sub/fleet',
      'the project by its full path, one encoded segment',
    );
    assert.equal(updated.title, 'Update app to 1.3.0');
    const made = mrs.find((m) => m.iid === pr.number)!;
    assert.equal(made.title, 'Update app to 1.3.0');
    assert.deepEqual([made.reviewer_ids, made.assignee_ids, made.auto_merge], [[11], [12], true]);
    assert.deepEqual(stand.calls[6]!.body, {
      auto_merge: true,
      merge_when_pipeline_succeeds: true,
      squash: true,
    });
    assert.equal(mrs[0]!.state, 'closed');
    assert.deepEqual(notes, [[3, 'Superseded. Closed by pawl.']]);
    for (const c of stand.calls) assert.equal(c.headers['private-token'], TOKEN);
  });

  test('a user name GitLab does not have: an error naming it, nothing assigned', async () => {
    const forge = forgeClient(
      { kind: 'gitlab', apiUrl: `${stand.url}/api/v4`, path: 'group/sub/fleet' },
      { fetch: (u, i) => fetch(u, i), token: TOKEN },
    );
    const before = stand.calls.length;
    await assert.rejects(
      forge.addPeople(3, { reviewers: ['nobody'], assignees: [] }),
      /GitLab has no user named "nobody"/,
    );
    assert.deepEqual(
      stand.calls.slice(before).map((c) => c.operationId),
      ['docs: GET /users (docs.gitlab.com/api/users)'],
    );
    assert.deepEqual(stand.problems, []);
  });

  test('the stand-in is not lenient: labels as a comma string (what pawl sent before) is refused by GitLab’s description', async () => {
    const before = stand.problems.length;
    const res = await fetch(`${stand.url}/api/v4/projects/group%2Fsub%2Ffleet/merge_requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_branch: 'a', target_branch: 'main', title: 't', labels: 'a,b' }),
    });
    assert.equal(res.status, 400);
    assert.match(
      stand.problems[before] ?? '',
      /postApiV4ProjectsIdMergeRequests.*body\.labels should be array/,
    );
    stand.problems.splice(before);
  });
});
