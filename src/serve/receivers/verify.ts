/**
 * verifyWebhook: is this request from whom the Receiver trusts, and what does it say?
 *
 * Each type is checked the way its vendor signs and Flux's notification-controller checks
 * (internal/server/receiver_handlers.go), with two deliberate differences: the status codes
 * tell a missing credential (401) from a wrong one (403) from a malformed body (400) where
 * Flux answers 400 for all, and registry events that add no tag (pulls, deletes, pushes by
 * digest) are answered 200 and trigger nothing. The credential is always checked before the
 * body is read, so an unauthenticated caller learns nothing about how bodies are parsed.
 */
import { parseImageReference, parseRepositoryRef } from '../../scan/index.js';
import {
  header,
  headerText,
  hmacMatches,
  isObject,
  field,
  mediaType,
  parseJson,
  parsePrefixedSignature,
  secretEquals,
  text,
  type Headers,
  type Json,
} from './request.js';
import {
  MAX_EVENT_IMAGES,
  MAX_WEBHOOK_BODY_BYTES,
  type EventImage,
  type IncomingWebhook,
  type ReceivedEvent,
  type ReceiverTarget,
  type ReceiverType,
  type WebhookVerdict,
} from './types.js';

type Refusal = Extract<WebhookVerdict, { error: string }>;

const TAG = /^[\w][\w.-]{0,127}$/;

function refuse(status: Refusal['status'], error: string): Refusal {
  return { status, error };
}

/** What a type's handler found once the request is verified. */
interface Found {
  event?: string | undefined;
  delivery?: string | undefined;
  /** Set when `delivery` comes from the body (see ReceivedEvent.replayId). */
  inBody?: true;
  images?: EventImage[];
}

type NotAccepted = Exclude<WebhookVerdict, { status: 202 }>;
type Handled = Found | NotAccepted;

type Handler = (target: ReceiverTarget, req: IncomingWebhook) => Handled;

// --- credentials -------------------------------------------------------------------------------

/** The header must equal the token (gitlab's X-Gitlab-Token, harbor's Authorization). */
function tokenHeader(headers: Headers, name: string, token: string): Refusal | undefined {
  const h = header(headers, name);
  if (h.kind === 'none') return refuse(401, `missing ${name} header`);
  if (h.kind === 'many') return refuse(400, `${name} sent more than once with different values`);
  if (!secretEquals(h.value, token)) return refuse(403, `${name} does not match the receiver's token`);
  return undefined;
}

/**
 * go-github's ValidatePayload, which Flux uses for github and bitbucket: X-Hub-Signature-256,
 * else X-Hub-Signature, each `sha1=`/`sha256=`/`sha512=` + hex HMAC of the raw body.
 */
function hubSignature(headers: Headers, body: Buffer, token: string): Refusal | undefined {
  const h256 = header(headers, 'X-Hub-Signature-256');
  const h = h256.kind === 'none' ? header(headers, 'X-Hub-Signature') : h256;
  const name = h256.kind === 'none' ? 'X-Hub-Signature' : 'X-Hub-Signature-256';
  if (h.kind === 'none') return refuse(401, 'missing X-Hub-Signature-256 (or X-Hub-Signature) header');
  if (h.kind === 'many') return refuse(400, `${name} sent more than once with different values`);
  return prefixedHmac(name, h.value, body, token);
}

function prefixedHmac(name: string, value: string, body: Buffer, token: string): Refusal | undefined {
  const sig = parsePrefixedSignature(value);
  if (!sig) return refuse(403, `${name} is not sha1=, sha256= or sha512= followed by a hex digest`);
  if (!hmacMatches(sig.algorithm, token, body, sig.hex)) {
    return refuse(403, `${name} does not match the body signed with the receiver's token`);
  }
  return undefined;
}

// --- bodies ------------------------------------------------------------------------------------

/** A JSON object body, or the 400 saying why not. */
function jsonObject(body: Buffer, what: string): { value: Record<string, Json> } | Refusal {
  const parsed = parseJson(body);
  if (!parsed.ok) return refuse(400, `${what}: ${parsed.error}`);
  if (!isObject(parsed.value)) return refuse(400, `${what}: the body is not a JSON object`);
  return { value: parsed.value };
}

/** go-github reads JSON, or a form whose `payload` field holds the JSON; anything else is refused. */
function forgeBody(headers: Headers, body: Buffer, vendor: string): Refusal | undefined {
  const type = mediaType(headerText(headers, 'Content-Type'));
  if (type === 'application/json') {
    const r = jsonObject(body, `${vendor} payload`);
    return 'error' in r ? r : undefined;
  }
  if (type === 'application/x-www-form-urlencoded') {
    const decoded = new TextDecoder('utf-8', { fatal: false }).decode(body);
    const payload = new URLSearchParams(decoded).get('payload');
    if (payload === null) return refuse(400, `${vendor} payload: the form has no "payload" field`);
    const r = jsonObject(Buffer.from(payload, 'utf8'), `${vendor} payload`);
    return 'error' in r ? r : undefined;
  }
  return refuse(
    400,
    `${vendor} payload: Content-Type ${type ?? '(none)'} is neither application/json nor application/x-www-form-urlencoded`,
  );
}

function eventAllowed(target: ReceiverTarget, event: string): boolean {
  if (target.events.length === 0) return true;
  const e = event.toLowerCase();
  return target.events.some((allowed) => allowed.toLowerCase() === e);
}

function notInEvents(event: string, target: ReceiverTarget): NotAccepted {
  return { status: 200, ignored: `event "${event}" is not in spec.events (${target.events.join(', ')})` };
}

// --- images ------------------------------------------------------------------------------------

/** An image from a name that includes its registry (`quay.io/org/app`, a resource_url). */
function imageFromReference(name: string, tag: string | undefined): EventImage | undefined {
  try {
    const ref = parseImageReference(name);
    return makeImage(ref.repo.registry, ref.repo.path, tag ?? ref.tag);
  } catch {
    return undefined;
  }
}

function makeImage(registry: string | undefined, path: string, tag: string | undefined): EventImage {
  const image: EventImage = { repository: registry ? `${registry}/${path}` : path, path };
  if (registry) image.registry = registry;
  if (tag !== undefined) image.tag = tag;
  return image;
}

/** Keeps images with a valid tag, without repeats, at most MAX_EVENT_IMAGES. */
function taggedImages(images: (EventImage | undefined)[]): EventImage[] {
  const seen = new Set<string>();
  const out: EventImage[] = [];
  for (const image of images) {
    if (!image?.tag || !TAG.test(image.tag) || !image.path || image.path.length > 255) continue;
    const key = `${image.repository}:${image.tag}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(image);
    if (out.length >= MAX_EVENT_IMAGES) break;
  }
  return out;
}

function noTag(what: string): NotAccepted {
  return { status: 200, ignored: `${what} names no image tag pawl can read: nothing new to select` };
}

// --- the types ---------------------------------------------------------------------------------

const generic: Handler = () => ({});

const genericHmac: Handler = (target, req) => {
  const h = header(req.headers, 'X-Signature');
  if (h.kind === 'none') return refuse(401, 'missing X-Signature header');
  if (h.kind === 'many') return refuse(400, 'X-Signature sent more than once with different values');
  return prefixedHmac('X-Signature', h.value, req.body, target.token) ?? {};
};

const github: Handler = (target, req) => {
  const bad = hubSignature(req.headers, req.body, target.token);
  if (bad) return bad;
  const event = headerText(req.headers, 'X-GitHub-Event');
  if (!event) return refuse(400, 'missing X-GitHub-Event header');
  const badBody = forgeBody(req.headers, req.body, 'GitHub');
  if (badBody) return badBody;
  // GitHub sends ping when the hook is created; answering it is how the user sees the hook works.
  if (event === 'ping') return { status: 200, ignored: 'GitHub ping' };
  if (!eventAllowed(target, event)) return notInEvents(event, target);
  return { event, delivery: headerText(req.headers, 'X-GitHub-Delivery') };
};

const gitlab: Handler = (target, req) => {
  const bad = tokenHeader(req.headers, 'X-Gitlab-Token', target.token);
  if (bad) return bad;
  const event = headerText(req.headers, 'X-Gitlab-Event');
  if (!event) return refuse(400, 'missing X-Gitlab-Event header');
  const body = jsonObject(req.body, 'GitLab payload');
  if ('error' in body) return body;
  if (!eventAllowed(target, event)) return notInEvents(event, target);
  return { event, delivery: headerText(req.headers, 'X-Gitlab-Event-UUID') };
};

const bitbucket: Handler = (target, req) => {
  const bad = hubSignature(req.headers, req.body, target.token);
  if (bad) return bad;
  const event = headerText(req.headers, 'X-Event-Key');
  if (!event) return refuse(400, 'missing X-Event-Key header');
  const badBody = forgeBody(req.headers, req.body, 'Bitbucket');
  if (badBody) return badBody;
  // "Test connection" in Bitbucket Server.
  if (event === 'diagnostics:ping') return { status: 200, ignored: 'Bitbucket ping' };
  if (!eventAllowed(target, event)) return notInEvents(event, target);
  return { event, delivery: headerText(req.headers, 'X-Request-Id') };
};

const HARBOR_PUSH = new Set(['PUSH_ARTIFACT', 'pushImage']);
const HARBOR_REPLICATION = new Set(['REPLICATION', 'replication']);

const harbor: Handler = (target, req) => {
  const bad = tokenHeader(req.headers, 'Authorization', target.token);
  if (bad) return bad;
  const body = jsonObject(req.body, 'Harbor payload');
  if ('error' in body) return body;
  const type = text(body.value, 'type');
  const data = field(body.value, 'event_data');
  if (!type || !isObject(data)) return refuse(400, 'Harbor payload: no "type" and "event_data"');
  // Tags copied in by replication are new to this registry, but the event does not list them.
  if (HARBOR_REPLICATION.has(type)) return { event: type, images: [] };
  if (!HARBOR_PUSH.has(type)) return { status: 200, ignored: `Harbor ${type} adds no tag` };
  const resources = field(data, 'resources');
  const fullName = text(data, 'repository', 'repo_full_name');
  const images = taggedImages(
    (Array.isArray(resources) ? resources : []).map((r: Json) => {
      const tag = text(r, 'tag');
      const url = text(r, 'resource_url');
      const fromUrl = url ? imageFromReference(url, tag) : undefined;
      return fromUrl ?? (fullName ? makeImage(undefined, fullName, tag) : undefined);
    }),
  );
  if (images.length === 0) return noTag(`Harbor ${type}`);
  return { event: type, images };
};

const dockerhub: Handler = (_target, req) => {
  // Docker Hub signs nothing: the secret path is the only credential (as in Flux). The payload's
  // callback_url is never called: it is the sender's word, and calling it would let anyone who
  // learns the path make pawl send requests.
  const body = jsonObject(req.body, 'Docker Hub payload');
  if ('error' in body) return body;
  const repoName = text(body.value, 'repository', 'repo_name');
  const pushData = field(body.value, 'push_data');
  if (!repoName || !isObject(pushData)) {
    return refuse(400, 'Docker Hub payload: no repository.repo_name and push_data');
  }
  let image: EventImage | undefined;
  try {
    const repo = parseRepositoryRef(`docker.io/${repoName}`);
    image = makeImage(repo.registry, repo.path, text(pushData, 'tag'));
  } catch {
    image = undefined;
  }
  const images = taggedImages([image]);
  if (images.length === 0) return noTag('Docker Hub push');
  return { event: 'push', images };
};

const quay: Handler = (_target, req) => {
  const body = jsonObject(req.body, 'Quay payload');
  if ('error' in body) return body;
  const dockerUrl = text(body.value, 'docker_url');
  if (!dockerUrl) return refuse(400, 'Quay payload: no docker_url');
  const updated = field(body.value, 'updated_tags');
  if (updated !== undefined && !Array.isArray(updated)) {
    return refuse(400, 'Quay payload: updated_tags is not a list');
  }
  const tags = (updated ?? []).filter((t: Json): t is string => typeof t === 'string');
  const images = taggedImages(tags.map((tag) => imageFromReference(dockerUrl, tag)));
  if (images.length === 0) return noTag('Quay notification');
  return { event: 'repo_push', images };
};

const NEXUS_MANIFEST = /^\/?v2\/(.+)\/manifests\/([^/]+)$/;

const nexus: Handler = (target, req) => {
  const h = header(req.headers, 'X-Nexus-Webhook-Signature');
  if (h.kind === 'none') return refuse(401, 'missing X-Nexus-Webhook-Signature header');
  if (h.kind === 'many') return refuse(400, 'X-Nexus-Webhook-Signature sent more than once');
  if (!hmacMatches('sha1', target.token, req.body, h.value)) {
    return refuse(403, "X-Nexus-Webhook-Signature does not match the body signed with the receiver's token");
  }
  const body = jsonObject(req.body, 'Nexus payload');
  if ('error' in body) return body;
  const action = text(body.value, 'action');
  if (!action || !text(body.value, 'repositoryName')) {
    return refuse(400, 'Nexus payload: no action and repositoryName');
  }
  const event = headerText(req.headers, 'X-Nexus-Webhook-Id') ?? action;
  const delivery = headerText(req.headers, 'X-Nexus-Webhook-Delivery');
  if (action === 'DELETED') return { status: 200, ignored: 'Nexus DELETED adds no tag' };
  const component = field(body.value, 'component');
  const asset = field(body.value, 'asset');
  let image: EventImage | undefined;
  if (isObject(component) && text(component, 'format') === 'docker') {
    const name = text(component, 'name');
    if (name) image = makeImage(undefined, name, text(component, 'version'));
  } else if (isObject(asset) && text(asset, 'format') === 'docker') {
    const m = NEXUS_MANIFEST.exec(text(asset, 'name') ?? '');
    if (m) image = makeImage(undefined, m[1]!, m[2]!);
  }
  const images = taggedImages([image]);
  if (images.length === 0) return noTag(`Nexus ${action} (not a tagged Docker image)`);
  return { event, delivery, images };
};

const acr: Handler = (_target, req) => {
  // Like Docker Hub, ACR's webhook is trusted by its secret path alone (as in Flux).
  const body = jsonObject(req.body, 'ACR payload');
  if ('error' in body) return body;
  const action = text(body.value, 'action');
  const target = field(body.value, 'target');
  if (!action || !isObject(target)) return refuse(400, 'ACR payload: no action and target');
  // chart_push is a Helm chart, delete and quarantine remove or hide: none adds an image tag.
  if (action !== 'push') return { status: 200, ignored: `ACR ${action} adds no image tag` };
  const repository = text(target, 'repository');
  const images = taggedImages([
    repository ? makeImage(text(body.value, 'request', 'host'), repository, text(target, 'tag')) : undefined,
  ]);
  if (images.length === 0) return noTag('ACR push');
  return { event: action, delivery: text(body.value, 'id'), inBody: true, images };
};

/** `Authorization: Bearer TOKEN`, as the registry's `notifications.endpoints[].headers` sends it. */
function bearer(headers: Headers, token: string): Refusal | undefined {
  const h = header(headers, 'Authorization');
  if (h.kind === 'none') return refuse(401, 'missing Authorization header');
  if (h.kind === 'many') return refuse(400, 'Authorization sent more than once with different values');
  const m = /^bearer +(.*)$/i.exec(h.value.trim());
  // The scheme is not secret; the comparison of the token itself is constant-time.
  if (!m) return refuse(403, 'Authorization is not "Bearer TOKEN"');
  if (!secretEquals(m[1]!, token)) return refuse(403, "the bearer token does not match the receiver's token");
  return undefined;
}

const distribution: Handler = (target, req) => {
  const bad = bearer(req.headers, target.token);
  if (bad) return bad;
  const body = jsonObject(req.body, 'registry notification');
  if ('error' in body) return body;
  const events = field(body.value, 'events');
  if (!Array.isArray(events)) return refuse(400, 'registry notification: no "events" list');
  const counts = new Map<string, number>();
  const images: (EventImage | undefined)[] = [];
  let delivery: string | undefined;
  for (const e of events as Json[]) {
    const action = text(e, 'action') ?? '(no action)';
    const tag = text(e, 'target', 'tag');
    const repository = text(e, 'target', 'repository');
    // Blob pushes, pushes by digest and pulls (the registry reports HEADs as pulls) carry no tag.
    if (action === 'push' && tag && repository) {
      images.push(makeImage(text(e, 'request', 'host'), repository, tag));
      delivery ??= text(e, 'id');
      continue;
    }
    const kind = action === 'push' ? 'push without a tag' : action;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const tagged = taggedImages(images);
  if (tagged.length === 0) {
    const what = [...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'no events';
    return { status: 200, ignored: `registry notification with no push of a tag (${what})` };
  }
  return { event: 'push', delivery, inBody: true, images: tagged };
};

const HANDLERS: Record<ReceiverType, Handler> = {
  generic,
  'generic-hmac': genericHmac,
  github,
  gitlab,
  bitbucket,
  harbor,
  dockerhub,
  quay,
  nexus,
  acr,
  distribution,
};

/**
 * Verifies one request that arrived on `target`'s path. Pure: the same request gives the same
 * verdict every time, so a replayed event is verified again; the daemon recognises it
 * (ReplayGuard; docs/receivers.md, "Replays").
 * Never throws for any header or body.
 */
export function verifyWebhook(target: ReceiverTarget, req: IncomingWebhook): WebhookVerdict {
  if (req.body.length > MAX_WEBHOOK_BODY_BYTES) {
    return refuse(413, `the body is larger than ${MAX_WEBHOOK_BODY_BYTES} bytes`);
  }
  // An empty token would make every HMAC and header check trivially forgeable.
  if (target.token === '') return refuse(403, 'the receiver has an empty token; nothing can be verified');
  const handle = Object.hasOwn(HANDLERS, target.type) ? HANDLERS[target.type] : undefined;
  if (!handle) return refuse(400, `receiver type "${String(target.type)}" is not supported`);
  const r = handle(target, req);
  if ('status' in r) return r;
  const event: ReceivedEvent = {
    receiver: `${target.namespace}/${target.name}`,
    type: target.type,
    images: r.images ?? [],
  };
  if (r.event !== undefined) event.event = r.event;
  if (r.delivery !== undefined) event.delivery = r.delivery;
  if (r.delivery !== undefined && r.inBody) event.replayId = r.delivery;
  return { status: 202, event };
}
