/**
 * Tag listing (`GET /v2/<name>/tags/list`): every page, followed by the OCI `Link` rule (a
 * `rel="next"` target, resolved against the page, on the same origin, never a page twice),
 * within the pool's page and tag limits. Complete or throws: never a partial list (SPEC §2).
 * Names that are not tags are dropped one by one and counted for the scan's anomaly.
 */
import { isValidTag } from '../../image/index.js';
import type { Authorizer } from './auth.js';
import { describeStatus, type Exchanger, type Fetched, type Op } from './exchange.js';
import { shapeProblem, tagPage } from './schemas.js';
import type { RepositoryRef, TagList } from './types.js';

const MAX_TAG_PAGE_BYTES = 32 << 20;

/** How many dropped names a scan's `invalid-tags` anomaly shows, and how much of each. */
const INVALID_EXAMPLES = 5;
const INVALID_EXAMPLE_CHARS = 60;

/** The `rel="next"` target of a Link header, or undefined. */
export function parseNextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (m && /;\s*rel\s*=\s*"?next"?/i.test(m[2]!)) return m[1]!;
  }
  return undefined;
}

/**
 * The tag list names the repository asked for. Some registries (Artifactory behind a
 * repository-per-subdomain set-up) add or drop a leading path component, so a match on
 * whole trailing components, ignoring case, is accepted; anything else is another repository.
 */
export function sameRepository(listed: string, asked: string): boolean {
  const a = listed.toLowerCase();
  const b = asked.toLowerCase();
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

/** What a listing has gathered so far. */
interface Gathered {
  tags: string[];
  seen: Set<string>;
  invalid: number;
  examples: string[];
}

/** Every tag of `repo`, page by page, within `op`. */
export async function listTags(
  ex: Exchanger,
  auth: Authorizer,
  op: Op,
  repo: RepositoryRef,
): Promise<TagList> {
  const limits = ex.pool.limits;
  const origin = ex.origin(repo);
  let next: string | undefined = `${origin}/v2/${repo.path}/tags/list?n=${limits.pageSize}`;
  const got: Gathered = { tags: [], seen: new Set(), invalid: 0, examples: [] };
  const visited = new Set<string>();
  let pages = 0;
  while (next) {
    pages++;
    if (pages > limits.maxPages) {
      throw ex.fail(
        op,
        `more than ${limits.maxPages} pages of tags; raise the page limit if this repository really is that large`,
      );
    }
    if (visited.has(next))
      throw ex.fail(
        op,
        `the registry's next-page link points back to a page already read (${ex.redactor.url(next)})`,
      );
    visited.add(next);
    op.step = `page ${pages}`;
    const f = await auth.request(op, repo, 'GET', next, { accept: 'application/json' }, MAX_TAG_PAGE_BYTES);
    readPage(ex, op, repo, f, pages, got);
    if (got.tags.length > limits.maxTags)
      throw ex.fail(
        op,
        `more than ${limits.maxTags} tags; raise the tag limit if this repository really is that large`,
      );
    const link = parseNextLink(f.headers.get('link'));
    if (link === undefined) break;
    const resolved = new URL(link, f.url);
    if (resolved.origin !== new URL(f.url).origin) {
      throw ex.fail(
        op,
        `page ${pages} links the next page to another origin (${resolved.origin}); refusing to follow`,
      );
    }
    next = resolved.toString();
  }
  ex.log.debug(
    { repository: repo.canonical, tags: got.tags.length, pages, requests: op.requests },
    'listed tags',
  );
  return {
    tags: got.tags,
    pages,
    requests: op.requests,
    responses: op.responses ?? [],
    ...(got.invalid > 0 ? { invalid: { count: got.invalid, examples: got.examples } } : {}),
  };
}

/** Adds one page's tags to `got`; a page that is not this repository's tag list throws. */
function readPage(
  ex: Exchanger,
  op: Op,
  repo: RepositoryRef,
  f: Fetched,
  pages: number,
  got: Gathered,
): void {
  if (f.status === 404)
    throw ex.fail(op, `${repo.registry} says ${repo.path} does not exist (${describeStatus(f)})`, 404);
  if (f.status !== 200) throw ex.fail(op, `page ${pages} answered ${describeStatus(f)}`, f.status);
  let json: unknown;
  try {
    json = JSON.parse(f.body.toString('utf8'));
  } catch {
    throw ex.fail(
      op,
      `page ${pages} is not a tag list (malformed JSON, ${f.body.length} bytes); nothing was kept`,
    );
  }
  const parsed = tagPage.safeParse(json);
  if (!parsed.success) {
    throw ex.fail(
      op,
      `page ${pages} is JSON but not a tag list (${shapeProblem(parsed.error)}); nothing was kept`,
    );
  }
  const page = parsed.data;
  if (!sameRepository(page.name, repo.path)) {
    throw ex.fail(
      op,
      `page ${pages} is the tag list of "${page.name}", not of "${repo.path}"; nothing was kept`,
    );
  }
  for (const t of page.tags ?? []) {
    // A name that is not a tag would be stored, selected and written into manifests.
    if (typeof t !== 'string' || !isValidTag(t)) {
      got.invalid++;
      if (got.examples.length < INVALID_EXAMPLES) {
        const quoted = JSON.stringify(t) ?? String(t);
        got.examples.push(
          ex.redactor.text(
            quoted.length > INVALID_EXAMPLE_CHARS ? `${quoted.slice(0, INVALID_EXAMPLE_CHARS)}…` : quoted,
          ),
        );
      }
      continue;
    }
    if (!got.seen.has(t)) {
      got.seen.add(t);
      got.tags.push(t);
    }
  }
}
