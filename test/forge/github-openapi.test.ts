/**
 * pawl's GitHub client against GitHub's own OpenAPI description (`@octokit/openapi`): every
 * request of the sequences a pass makes — find pawl's open pull request, open one with labels,
 * reviewers and assignees, update its title, body and labels, comment on and close a superseded
 * one — is found in the description and validates against it, and every answer the stand-in
 * gives is GitHub's own example for that operation (changed only in the fields pawl reads) and
 * validates against the response schema. Auto-merge is a GraphQL mutation, which no OpenAPI
 * description covers: its request is checked for shape only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { forgeClient, forgeRepo, type ForgeClient, type ForgeRepo } from '../../src/forge/index.js';
import {
  githubDescription,
  startOpenApiForge,
  type ForgeCall,
  type ForgeDescription,
  type OpenApiForge,
} from '../helpers/openapi-forge.js';

const TOKEN = 'ghp_openapiTOKEN0123456789abcdef';

interface Pull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  labels: string[];
  state: 'open' | 'closed';
}

/** An in-memory repository answering with GitHub's examples, changed in the fields pawl reads. */
function githubModel(desc: ForgeDescription, pulls: Pull[]) {
  const labelExample = (desc.example('issues/add-labels', '200') as unknown as Record<string, unknown>[])[0]!;
  const label = (name: string) => ({ ...labelExample, name });
  const pullJson = (p: Pull, example: Record<string, unknown>) => {
    const head = example.head as Record<string, unknown>;
    const base = example.base as Record<string, unknown>;
    return {
      ...example,
      number: p.number,
      node_id: `PR_node${p.number}`,
      html_url: `https://github.com/org/fleet/pull/${p.number}`,
      state: p.state,
      merged_at: null,
      title: p.title,
      body: p.body,
      labels: p.labels.map(label),
      // GitHub's examples list teams without the `type` its schema requires: none here.
      requested_teams: [],
      head: { ...head, ref: p.head },
      base: { ...base, ref: p.base },
    };
  };
  return (call: Omit<ForgeCall, 'status'>) => {
    const n = Number(call.params.pull_number ?? call.params.issue_number);
    const p = pulls.find((x) => x.number === n);
    const body = (call.body ?? {}) as Record<string, unknown>;
    switch (call.operationId) {
      case 'pulls/list': {
        const items = pulls.filter((x) => x.state === 'open' && x.base === call.query.base);
        const ex = (desc.example('pulls/list', '200') as unknown as Record<string, unknown>[])[0]!;
        return { status: 200, body: items.map((x) => pullJson(x, ex)) };
      }
      case 'pulls/create': {
        const created: Pull = {
          number: Math.max(0, ...pulls.map((x) => x.number)) + 1,
          head: String(body.head),
          base: String(body.base),
          title: String(body.title),
          body: String(body.body ?? ''),
          labels: [],
          state: 'open',
        };
        pulls.push(created);
        return { status: 201, body: pullJson(created, desc.example('pulls/create', '201')) };
      }
      case 'pulls/update':
        if (body.title !== undefined) p!.title = String(body.title);
        if (body.body !== undefined) p!.body = String(body.body);
        if (body.state === 'closed') p!.state = 'closed';
        return { status: 200, body: pullJson(p!, desc.example('pulls/update', '200')) };
      case 'issues/add-labels':
      case 'issues/set-labels':
        p!.labels =
          call.operationId === 'issues/add-labels'
            ? [...p!.labels, ...(body.labels as string[])]
            : (body.labels as string[]);
        return { status: 200, body: p!.labels.map(label) };
      case 'pulls/request-reviewers':
        return { status: 201, body: pullJson(p!, desc.example('pulls/request-reviewers', '201')) };
      case 'issues/add-assignees':
        return { status: 201, body: desc.example('issues/add-assignees', '201') };
      case 'issues/create-comment':
        return { status: 201, body: { ...desc.example('issues/create-comment', '201'), body: body.body } };
      default:
        return { status: 501, body: { message: `the model has no ${call.operationId}` } };
    }
  };
}

function sequence(forge: ForgeClient) {
  return async () => {
    const open = await forge.listOpen('main');
    const pr = await forge.open({
      head: 'pawl/fleet/app-1.2.0',
      base: 'main',
      title: 'Update app to 1.2.0',
      body: 'b\n\n<!-- pawl:automation flux-system/fleet -->',
      labels: ['images'],
      draft: true,
    });
    await forge.addPeople(pr.number, { reviewers: ['rita'], assignees: ['ash', 'bo'] });
    const updated = await forge.update(pr.number, {
      title: 'Update app to 1.3.0',
      body: 'c\n\n<!-- pawl:automation flux-system/fleet -->',
      labels: ['images', 'automated'],
    });
    const superseded = open.find((p) => p.number !== pr.number)!;
    await forge.comment(superseded.number, `Superseded by #${pr.number}. Closed by pawl.`);
    await forge.close(superseded.number);
    return { open, pr, updated };
  };
}

for (const [label, file, prefix] of [
  ['api.github.com', 'api.github.com.json', ''],
  ['GitHub Enterprise Server 3.19 (/api/v3)', 'ghes-3.19.json', '/api/v3'],
] as const) {
  describe(`GitHub's OpenAPI description: ${label}`, () => {
    let desc: ForgeDescription;
    let stand: OpenApiForge;
    let pulls: Pull[];
    before(async () => {
      desc = githubDescription(file, prefix);
      pulls = [
        {
          number: 7,
          head: 'pawl/fleet/app-1.1.0',
          base: 'main',
          title: 'Update app to 1.1.0',
          body: 'x <!-- pawl:automation flux-system/fleet -->',
          labels: [],
          state: 'open',
        },
      ];
      stand = await startOpenApiForge(desc, githubModel(desc, pulls));
    });
    after(() => stand?.close());

    test('find, open with labels, reviewers and assignees, update, comment on and close the superseded one: every request validates', async () => {
      const repo: ForgeRepo = { kind: 'github', apiUrl: stand.url, path: 'org/fleet' };
      if (prefix) {
        // The Enterprise base URL is what pawl derives from a GHES host.
        const derived = forgeRepo('https://ghe.example.com/org/fleet.git', { provider: 'github' });
        assert.ok(typeof derived !== 'string');
        assert.equal(derived.apiUrl, 'https://ghe.example.com/api/v3');
      }
      const forge = forgeClient(repo, { fetch: (u, i) => fetch(u, i), token: TOKEN, sleep: async () => {} });
      const { open, pr, updated } = await sequence(forge)();
      assert.deepEqual(stand.problems, []);
      assert.deepEqual(
        stand.calls.map((c) => [c.operationId, c.status]),
        [
          ['pulls/list', 200],
          ['pulls/create', 201],
          ['issues/add-labels', 200],
          ['pulls/request-reviewers', 201],
          ['issues/add-assignees', 201],
          ['pulls/update', 200],
          ['issues/set-labels', 200],
          ['issues/create-comment', 201],
          ['pulls/update', 200],
        ],
      );
      assert.deepEqual(
        open.map((p) => [p.number, p.head, p.state]),
        [[7, 'pawl/fleet/app-1.1.0', 'open']],
      );
      assert.equal(pr.nodeId, 'PR_node8');
      assert.deepEqual([updated.title, updated.labels], ['Update app to 1.3.0', ['images', 'automated']]);
      assert.deepEqual(stand.calls[1]!.body, {
        title: 'Update app to 1.2.0',
        head: 'pawl/fleet/app-1.2.0',
        base: 'main',
        body: 'b\n\n<!-- pawl:automation flux-system/fleet -->',
        draft: true,
      });
      assert.deepEqual(stand.calls[3]!.body, { reviewers: ['rita'] });
      assert.deepEqual(stand.calls[4]!.body, { assignees: ['ash', 'bo'] });
      assert.deepEqual(stand.calls[8]!.body, { state: 'closed' });
      assert.deepEqual(
        pulls.map((p) => [p.number, p.state]),
        [
          [7, 'closed'],
          [8, 'open'],
        ],
      );
      for (const c of stand.calls) {
        assert.equal(c.headers.authorization, `Bearer ${TOKEN}`, 'the token in the header');
        assert.ok(!c.path.includes(TOKEN) && !JSON.stringify(c.query).includes(TOKEN), 'never in the URL');
      }
    });

    test('the stand-in is not lenient: a request GitHub’s description does not allow is named', async () => {
      const before = stand.problems.length;
      const wrong = await fetch(`${stand.url}/repos/org/fleet/pulls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 't', head: 'h', base: 'main', draft: 'yes' }),
      });
      assert.equal(wrong.status, 400);
      const unknown = await fetch(`${stand.url}/repos/org/fleet/pulls/1/automerge`, { method: 'POST' });
      assert.equal(unknown.status, 404);
      const query = await fetch(`${stand.url}/repos/org/fleet/pulls?state=opened`);
      assert.equal(query.status, 400);
      const [draft, none, state] = stand.problems.slice(before);
      assert.match(draft ?? '', /pulls\/create.*body.*draft/);
      assert.match(none ?? '', /no operation .* has this method and path/);
      assert.match(state ?? '', /query parameter state=opened/);
      stand.problems.splice(before);
    });
  });
}

describe('GitHub auto-merge: GraphQL, outside any OpenAPI description', () => {
  test('enablePullRequestAutoMerge with the pull request’s node id, at /graphql (GHES: /api/graphql)', async () => {
    const desc = githubDescription();
    assert.ok(
      !desc.operations.some((o) => o.template === '/graphql'),
      'GitHub’s REST description has no GraphQL operation to validate against',
    );
    const seen: { url: string; body: unknown }[] = [];
    for (const apiUrl of ['https://api.github.com', 'https://ghe.example.com/api/v3']) {
      const forge = forgeClient(
        { kind: 'github', apiUrl, path: 'org/fleet' },
        {
          token: TOKEN,
          fetch: async (url, init) => {
            seen.push({ url, body: JSON.parse(String(init.body)) });
            return new Response(
              JSON.stringify({ data: { enablePullRequestAutoMerge: { clientMutationId: null } } }),
            );
          },
        },
      );
      await forge.autoMerge(
        {
          number: 8,
          nodeId: 'PR_node8',
          url: '',
          state: 'open',
          head: 'h',
          base: 'main',
          title: '',
          body: '',
          labels: [],
        },
        'squash',
      );
    }
    assert.deepEqual(
      seen.map((s) => s.url),
      ['https://api.github.com/graphql', 'https://ghe.example.com/api/graphql'],
    );
    const body = seen[0]!.body as { query: string; variables: unknown };
    assert.match(
      body.query,
      /enablePullRequestAutoMerge\(input: \{pullRequestId: \$id, mergeMethod: \$method\}\)/,
    );
    assert.deepEqual(body.variables, { id: 'PR_node8', method: 'SQUASH' });
  });

  test('GraphQL’s errors (HTTP 200) are an error, not a success', async () => {
    const forge = forgeClient(
      { kind: 'github', apiUrl: 'https://api.github.com', path: 'org/fleet' },
      {
        token: TOKEN,
        fetch: async () =>
          new Response(
            JSON.stringify({
              errors: [{ message: 'Pull request Auto merge is not allowed for this repository' }],
            }),
          ),
      },
    );
    await assert.rejects(
      forge.autoMerge(
        {
          number: 8,
          nodeId: 'PR_x',
          url: '',
          state: 'open',
          head: 'h',
          base: 'main',
          title: '',
          body: '',
          labels: [],
        },
        'merge',
      ),
      /auto-merge could not be enabled on #8: Pull request Auto merge is not allowed/,
    );
  });
});
