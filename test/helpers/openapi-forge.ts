/**
 * A forge that checks every request against the forge's own OpenAPI description (no GitHub or
 * GitLab server can run here). An HTTP server on loopback finds each request's operation by
 * method and path template, validates its path and query parameters and JSON body against the
 * operation's schemas (ajv), records it, and answers what the test gives, after checking that
 * the answer validates against the operation's response schema for its status. Anything that
 * does not validate is a problem: answered 400 (or 500 for a bad answer) and listed in
 * `problems`, which a test asserts empty.
 *
 * GitHub: `@octokit/openapi` (OpenAPI 3.0; api.github.com, and the GHES files for `/api/v3`).
 * GitLab: the verbatim excerpt of its OpenAPI 2.0 file in test/fixtures/forge/, and, for the two
 * calls that file does not describe (GET /users, POST …/notes), the shape GitLab's REST docs give.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Ajv from 'ajv';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './world.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

interface Param {
  name: string;
  in: string;
  required: boolean;
  schema: JsonObject;
}

interface Operation {
  id: string;
  method: string;
  template: string;
  re: RegExp;
  names: string[];
  params: Param[];
  body: JsonObject | null;
  /** Status → the schema its answer must meet (null: documented, with no JSON body). */
  responses: Map<string, JsonObject | null>;
  /** Where the operation is described: the OpenAPI file, or the forge's docs (GitLab's two). */
  source: 'openapi' | 'docs';
}

export interface ForgeDescription {
  name: string;
  /** The API's base path on the stand-in: '' for api.github.com, '/api/v3' for GHES. */
  prefix: string;
  operations: Operation[];
  /** The answer a forge's description gives as its example, for an operation and status. */
  example(operationId: string, status: string): JsonObject;
  /** Where the description was changed to match what the forge answers, and why. */
  corrections: string[];
  validator(schema: JsonObject): (data: unknown) => string | null;
}

const asObject = (v: Json | undefined): JsonObject =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};

/** JSON pointer lookup (`#/a/b~1c`) in a document. */
function pointer(doc: Json, ref: string): Json | undefined {
  let at: Json | undefined = doc;
  for (const raw of ref.replace(/^#\//, '').split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    at = at !== null && typeof at === 'object' && !Array.isArray(at) ? at[key] : undefined;
    if (at === undefined) return undefined;
  }
  return at;
}

/**
 * A copy of `node` whose `$ref`s point into the document added to ajv as `id`; a reference to
 * something the (excerpted) document lacks stands for any value, and is listed in `missing`.
 */
function rebase(node: Json, doc: Json, id: string, missing: Set<string>): Json {
  if (Array.isArray(node)) return node.map((n) => rebase(n, doc, id, missing));
  if (node === null || typeof node !== 'object') return node;
  const ref = node.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    if (pointer(doc, ref) === undefined) {
      missing.add(ref);
      return { description: `${ref}: outside the excerpt, any value` };
    }
    return { $ref: `${id}${ref}` };
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, rebase(v, doc, id, missing)]));
}

function templateRegex(template: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => {
      const m = /^\{([^}]+)\}$/.exec(part);
      if (!m) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      names.push(m[1]!);
      return '([^/]+)';
    })
    .join('');
  return { re: new RegExp(`^${source}$`), names };
}

function makeAjv(): Ajv.Ajv {
  // OpenAPI's own words (nullable, example, discriminator, x-*) beside JSON Schema's; GitHub's
  // and GitLab's formats (int32, uri, date-time) are not what is being checked.
  return new Ajv({
    allErrors: true,
    nullable: true,
    unknownFormats: 'ignore',
    validateSchema: false,
    logger: false,
  });
}

function description(
  name: string,
  prefix: string,
  doc: JsonObject,
  id: string,
  ops: Operation[],
  corrections: string[],
  example: ForgeDescription['example'],
): ForgeDescription {
  const ajv = makeAjv();
  const missing = new Set<string>();
  ajv.addSchema(rebase(doc, doc, id, missing) as object, id);
  const cache = new Map<JsonObject, (data: unknown) => string | null>();
  return {
    name,
    prefix,
    operations: ops,
    example,
    corrections: [
      ...corrections,
      ...[...missing].sort().map((m) => `${m} is outside the excerpt: any value is accepted for it`),
    ],
    validator(schema) {
      let v = cache.get(schema);
      if (!v) {
        const compiled = ajv.compile(rebase(schema, doc, id, missing) as object);
        v = (data) =>
          compiled(data) ? null : ajv.errorsText(compiled.errors, { dataVar: 'value', separator: '; ' });
        cache.set(schema, v);
      }
      return v;
    },
  };
}

const GITHUB_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * GitHub's REST description from `@octokit/openapi`: `api.github.com.json`, or a GHES file
 * (`ghes-3.19.json`) served under `/api/v3`. Only the schemas are given to ajv; operations are
 * read from every path, so a call pawl should not make is still named by its operation.
 */
export function githubDescription(file = 'api.github.com.json', prefix = ''): ForgeDescription {
  const full = JSON.parse(
    readFileSync(join(ROOT, 'node_modules', '@octokit', 'openapi', 'generated', file), 'utf8'),
  ) as JsonObject;
  const components = asObject(full.components);
  const doc: JsonObject = { components: { schemas: asObject(components.schemas) } };
  const deref = (v: Json | undefined): JsonObject => {
    const o = asObject(v);
    return typeof o.$ref === 'string' ? asObject(pointer(full, o.$ref)) : o;
  };
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(asObject(full.paths))) {
    const pathItem = asObject(item);
    for (const method of GITHUB_METHODS) {
      const op = asObject(pathItem[method]);
      if (typeof op.operationId !== 'string') continue;
      const params = [
        ...(Array.isArray(pathItem.parameters) ? pathItem.parameters : []),
        ...(Array.isArray(op.parameters) ? op.parameters : []),
      ].map((p): Param => {
        const d = deref(p);
        return {
          name: String(d.name),
          in: String(d.in),
          required: d.required === true,
          schema: asObject(d.schema),
        };
      });
      const body = asObject(asObject(asObject(asObject(op.requestBody).content)['application/json']).schema);
      const responses = new Map<string, JsonObject | null>();
      for (const [status, r] of Object.entries(asObject(op.responses))) {
        const schema = asObject(asObject(asObject(deref(r).content)['application/json']).schema);
        responses.set(status, Object.keys(schema).length > 0 ? schema : null);
      }
      ops.push({
        id: op.operationId,
        method: method.toUpperCase(),
        template,
        ...templateRegex(template),
        params,
        body: Object.keys(body).length > 0 ? body : null,
        responses,
        source: 'openapi',
      });
    }
  }
  const example = (operationId: string, status: string): JsonObject => {
    const op = ops.find((o) => o.id === operationId);
    const item = asObject(asObject(full.paths)[op?.template ?? '']);
    const r = deref(asObject(asObject(item[op?.method.toLowerCase() ?? '']).responses)[status]);
    const ex = deref(asObject(asObject(asObject(r.content)['application/json']).examples).default);
    if (ex.value === undefined) throw new Error(`${file}: no example for ${operationId} ${status}`);
    return structuredClone(ex.value) as JsonObject;
  };
  return description(`GitHub (${file})`, prefix, doc, 'github.json', ops, [], example);
}

/** GitLab answers these as arrays and booleans; its v2 file types them `string` (GitLab's REST docs). */
const GITLAB_CORRECTIONS: [string, string, JsonObject][] = [
  ['API_Entities_MergeRequest', 'labels', { type: 'array', items: { type: 'string' } }],
];

/** GitLab's REST docs' shape for the two calls its v2 file does not describe. */
const GITLAB_DOCS_OPERATIONS: Omit<Operation, 're' | 'names'>[] = [
  {
    id: 'docs: GET /users (docs.gitlab.com/api/users)',
    method: 'GET',
    template: '/api/v4/users',
    params: [
      { name: 'username', in: 'query', required: false, schema: { type: 'string' } },
      { name: 'page', in: 'query', required: false, schema: { type: 'integer' } },
      { name: 'per_page', in: 'query', required: false, schema: { type: 'integer' } },
    ],
    body: null,
    responses: new Map([
      [
        '200',
        {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'username'],
            properties: { id: { type: 'integer' }, username: { type: 'string' } },
          },
        },
      ],
    ]),
    source: 'docs',
  },
  {
    id: 'docs: POST /projects/:id/merge_requests/:merge_request_iid/notes (docs.gitlab.com/api/notes)',
    method: 'POST',
    template: '/api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes',
    params: [
      { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'merge_request_iid', in: 'path', required: true, schema: { type: 'integer' } },
    ],
    body: {
      type: 'object',
      required: ['body'],
      additionalProperties: false,
      properties: {
        body: { type: 'string' },
        created_at: { type: 'string' },
        internal: { type: 'boolean' },
        merge_request_diff_head_sha: { type: 'string' },
      },
    },
    responses: new Map([
      [
        '201',
        {
          type: 'object',
          required: ['id', 'body'],
          properties: { id: { type: 'integer' }, body: { type: 'string' } },
        },
      ],
    ]),
    source: 'docs',
  },
];

export function gitlabDescription(): ForgeDescription {
  const doc = parseYaml(
    readFileSync(join(ROOT, 'test', 'fixtures', 'forge', 'gitlab-openapi-v2.subset.yaml'), 'utf8'),
  ) as JsonObject;
  const corrections: string[] = [];
  for (const [def, prop, schema] of GITLAB_CORRECTIONS) {
    const props = asObject(asObject(asObject(doc.definitions)[def]).properties);
    corrections.push(
      `${def}.${prop}: the file says ${JSON.stringify(props[prop])}, GitLab answers ${JSON.stringify(schema)}`,
    );
    props[prop] = schema;
  }
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(asObject(doc.paths))) {
    for (const [method, raw] of Object.entries(asObject(item))) {
      const op = asObject(raw);
      const all = (Array.isArray(op.parameters) ? op.parameters : []).map(asObject);
      const bodyParam = all.find((p) => p.in === 'body');
      const params = all
        .filter((p) => p.in !== 'body')
        .map((p): Param => {
          const { name, in: where, required, description: _d, example: _e, ...schema } = p;
          return { name: String(name), in: String(where), required: required === true, schema };
        });
      const responses = new Map<string, JsonObject | null>();
      for (const [status, r] of Object.entries(asObject(op.responses))) {
        const schema = asObject(asObject(r).schema);
        responses.set(status, Object.keys(schema).length > 0 ? schema : null);
      }
      ops.push({
        id: String(op.operationId),
        method: method.toUpperCase(),
        template,
        ...templateRegex(template),
        params,
        body: bodyParam ? asObject(bodyParam.schema) : null,
        responses,
        source: 'openapi',
      });
    }
  }
  for (const d of GITLAB_DOCS_OPERATIONS) ops.push({ ...d, ...templateRegex(d.template) });
  return description(
    'GitLab (openapi_v2.yaml excerpt)',
    '',
    doc,
    'gitlab.json',
    ops,
    corrections,
    (operationId) => {
      throw new Error(`GitLab's file gives no example for ${operationId}`);
    },
  );
}

export interface ForgeCall {
  operationId: string;
  source: 'openapi' | 'docs';
  method: string;
  /** The path under the API's base, as sent (percent-encoding kept). */
  path: string;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  headers: IncomingMessage['headers'];
  /** What the stand-in answered. */
  status: number;
}

export interface ForgeAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface OpenApiForge {
  /** `http://127.0.0.1:PORT` + the description's prefix: the API's base URL. */
  url: string;
  calls: ForgeCall[];
  problems: string[];
  close(): Promise<void>;
}

function coerce(value: string, schema: JsonObject): unknown {
  const type = schema.type;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (type === 'array') return value.split(',');
  return value;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export async function startOpenApiForge(
  desc: ForgeDescription,
  answer: (call: Omit<ForgeCall, 'status'>) => ForgeAnswer | Promise<ForgeAnswer>,
): Promise<OpenApiForge> {
  const calls: ForgeCall[] = [];
  const problems: string[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://stand-in');
      const method = req.method ?? 'GET';
      const where = `${method} ${url.pathname}${url.search}`;
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(body === undefined ? '' : JSON.stringify(body));
      };
      const fail = (status: number, message: string): void => {
        problems.push(message);
        reply(status, { message });
      };
      if (!url.pathname.startsWith(desc.prefix))
        return fail(404, `${where}: not under ${desc.name}'s base path ${desc.prefix}`);
      const path = url.pathname.slice(desc.prefix.length);
      const matches = desc.operations
        .filter((o) => o.method === method)
        .map((o) => ({ o, m: o.re.exec(path) }))
        .filter((x): x is { o: Operation; m: RegExpExecArray } => x.m !== null)
        // A literal segment beats a template one (`/pulls/comments` over `/pulls/{n}`).
        .sort((a, b) => a.o.names.length - b.o.names.length);
      const found = matches[0];
      if (!found) return fail(404, `${where}: no operation in ${desc.name} has this method and path`);
      const op = found.o;
      const bad: string[] = [];
      const params: Record<string, string> = {};
      op.names.forEach((n, i) => (params[n] = decodeURIComponent(found.m[i + 1]!)));
      for (const p of op.params.filter((x) => x.in === 'path')) {
        const why = desc.validator(p.schema)(coerce(params[p.name] ?? '', p.schema));
        if (why) bad.push(`path parameter ${p.name}: ${why}`);
      }
      const query: Record<string, string> = Object.fromEntries(url.searchParams);
      const queryParams = op.params.filter((x) => x.in === 'query');
      for (const [k, v] of Object.entries(query)) {
        const p = queryParams.find((x) => x.name === k);
        if (!p) bad.push(`query parameter ${k} is not one the operation takes`);
        else {
          const why = desc.validator(p.schema)(coerce(v, p.schema));
          if (why) bad.push(`query parameter ${k}=${v}: ${why}`);
        }
      }
      for (const p of queryParams)
        if (p.required && !(p.name in query)) bad.push(`query parameter ${p.name} is required`);
      const text = await readBody(req);
      let body: unknown;
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          bad.push('the body is not JSON');
        }
        if (!op.body) bad.push('the operation takes no body');
        else if (body !== undefined) {
          const why = desc.validator(op.body)(body);
          if (why) bad.push(`body: ${why.replaceAll('value', 'body')}`);
        }
      } else if (op.body && ['POST', 'PUT', 'PATCH'].includes(method)) {
        const why = desc.validator(op.body)({});
        if (why) bad.push(`no body, and an empty one is not valid: ${why}`);
      }
      const call = {
        operationId: op.id,
        source: op.source,
        method,
        path,
        params,
        query,
        body,
        headers: req.headers,
      };
      if (bad.length > 0) {
        calls.push({ ...call, status: 400 });
        return fail(400, `${where} (${op.id}): ${bad.join('; ')}`);
      }
      const a = await answer(call);
      calls.push({ ...call, status: a.status });
      const documented = op.responses.get(String(a.status));
      if (a.status < 400) {
        if (documented === undefined)
          return fail(
            500,
            `${where} (${op.id}): the stand-in answered ${a.status}, a status the operation does not document`,
          );
        if (documented !== null) {
          const why = desc.validator(documented)(a.body);
          if (why)
            return fail(500, `${where} (${op.id}): the stand-in's ${a.status} answer is not valid: ${why}`);
        }
      }
      reply(a.status, a.body, a.headers);
    })().catch((err: unknown) => {
      problems.push(`${req.method} ${req.url}: ${String(err)}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${desc.prefix}`,
    calls,
    problems,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
