/**
 * resolveTriggers: which ImageRepositories (and automations) a verified event makes due. Pure
 * over the loaded configuration.
 *
 * The Receiver's `resources` are read as Flux's notification-controller reads them: a name
 * selects that object (its `matchLabels` are then ignored), `*` selects every object of the
 * kind in the namespace whose labels include all of `matchLabels`, and the namespace defaults
 * to the Receiver's. pawl then maps each object to the repositories it depends on, and — when
 * the event names images — keeps only the repositories of those images for which some
 * ImagePolicy could select the pushed tag. Everything left out is listed with the reason.
 */
import { selectPolicies } from '../../config/index.js';
import {
  refKey,
  type Config,
  type ImagePolicy,
  type ImageRepository,
  type ImageUpdateAutomation,
  type Receiver,
} from '../../config/index.js';
import { sharedPolicy } from '../../select/index.js';
import { imageMatcher } from './match.js';
import type { EventImage, ReceivedEvent } from './types.js';

export interface Triggers {
  /** `namespace/name` of the ImageRepositories to rescan now, sorted. */
  repositories: string[];
  /**
   * `namespace/name` of the ImageUpdateAutomations the Receiver names (directly, or through their
   * GitRepository) that depend on a triggered repository — or all of them for an event that
   * names no image. Automations that depend on a triggered repository without being named are
   * the daemon's to find ("a verified event runs the dependent automations").
   */
  automations: string[];
  /**
   * The pushed tags the event names that some policy of a triggered repository could select, as
   * `namespace/name:tag` (a tag holds no `:`), sorted. A registry may notify before its tag list
   * shows the tag; the daemon scans again shortly until it does (docs/receivers.md).
   */
  tags: string[];
  /** Why each object the Receiver names is not triggered. */
  skipped: string[];
}

type Selectable = 'ImageRepository' | 'ImagePolicy' | 'ImageUpdateAutomation' | 'GitRepository';

function mapOf(
  config: Config,
  kind: Selectable,
): Map<string, { metadata: { labels: Record<string, string> } }> {
  switch (kind) {
    case 'ImageRepository':
      return config.imageRepositories;
    case 'ImagePolicy':
      return config.imagePolicies;
    case 'ImageUpdateAutomation':
      return config.automations;
    case 'GitRepository':
      return config.gitRepositories;
  }
}

function isSelectable(kind: string): kind is Selectable {
  return (
    kind === 'ImageRepository' ||
    kind === 'ImagePolicy' ||
    kind === 'ImageUpdateAutomation' ||
    kind === 'GitRepository'
  );
}

function labelsMatch(labels: Record<string, string>, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

function describeLabels(labels: Record<string, string>): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  return pairs.length ? pairs.join(',') : '(any)';
}

/** The objects the Receiver's resources name, as `kind` + `namespace/name`. */
function namedObjects(
  receiver: Receiver,
  config: Config,
  skipped: string[],
): { kind: Selectable; key: string }[] {
  const out: { kind: Selectable; key: string }[] = [];
  for (const r of receiver.spec.resources) {
    const ns = r.namespace ?? receiver.metadata.namespace;
    if (!isSelectable(r.kind)) {
      skipped.push(`${r.kind} ${ns}/${r.name}: pawl does not act on ${r.kind}`);
      continue;
    }
    const map = mapOf(config, r.kind);
    if (r.name === '*') {
      if (r.matchLabels === undefined) {
        skipped.push(`${r.kind} ${ns}/*: name "*" needs matchLabels`);
        continue;
      }
      const hits = [...map]
        .filter(([key, o]) => key.startsWith(`${ns}/`) && labelsMatch(o.metadata.labels, r.matchLabels!))
        .map(([key]) => key)
        .sort();
      if (hits.length === 0) {
        skipped.push(`${r.kind} ${ns}/*: none has the labels ${describeLabels(r.matchLabels)}`);
      }
      for (const key of hits) out.push({ kind: r.kind, key });
      continue;
    }
    const key = `${ns}/${r.name}`;
    if (!map.has(key)) skipped.push(`${r.kind} ${key}: not found`);
    else out.push({ kind: r.kind, key });
  }
  return out;
}

function repositoriesOfAutomation(config: Config, automation: ImageUpdateAutomation): string[] {
  return selectPolicies(config, automation).map((p) => refKey(p.spec.imageRepositoryRef));
}

/** A fixed instant: with one tag, a newestBuild policy only needs to know the tag has a build time. */
const JUST_PUSHED = new Date(0);

/** True when some policy on the repository would select `tag` were it the only tag. */
function someoneCouldSelect(policies: ImagePolicy[], repo: ImageRepository, tag: string): boolean {
  return policies.some((p) => {
    try {
      const compiled = sharedPolicy(p.spec, repo.spec.exclusionList);
      const opts = compiled.strategy === 'newestBuild' ? { buildTimes: new Map([[tag, JUST_PUSHED]]) } : {};
      return compiled.select([tag], opts).tag === tag;
    } catch {
      // An invalid policy was refused when the configuration loaded; it selects nothing.
      return false;
    }
  });
}

function describeImages(images: EventImage[]): string {
  const shown = images.slice(0, 3).map((i) => (i.tag ? `${i.repository}:${i.tag}` : `${i.repository}`));
  return shown.join(', ') + (images.length > 3 ? ` and ${images.length - 3} more` : '');
}

export function resolveTriggers(event: ReceivedEvent, receiver: Receiver, config: Config): Triggers {
  const skipped: string[] = [];
  const repoKeys = new Set<string>();
  const automationKeys = new Set<string>();
  const addAutomation = (a: ImageUpdateAutomation): void => {
    const key = refKey(a.metadata);
    if (a.spec.suspend) {
      skipped.push(`ImageUpdateAutomation ${key}: suspended`);
      return;
    }
    automationKeys.add(key);
    for (const r of repositoriesOfAutomation(config, a)) repoKeys.add(r);
  };
  for (const { kind, key } of namedObjects(receiver, config, skipped)) {
    switch (kind) {
      case 'ImageRepository':
        repoKeys.add(key);
        break;
      case 'ImagePolicy':
        repoKeys.add(refKey(config.imagePolicies.get(key)!.spec.imageRepositoryRef));
        break;
      case 'ImageUpdateAutomation':
        addAutomation(config.automations.get(key)!);
        break;
      case 'GitRepository':
        for (const a of config.automations.values()) {
          if (refKey(a.spec.sourceRef) === key) addAutomation(a);
        }
        break;
    }
  }

  const repositories: string[] = [];
  const awaited: string[] = [];
  for (const key of [...repoKeys].sort()) {
    const repo = config.imageRepositories.get(key);
    if (!repo) {
      skipped.push(`ImageRepository ${key}: not found`);
      continue;
    }
    if (repo.spec.suspend) {
      skipped.push(`ImageRepository ${key}: suspended`);
      continue;
    }
    if (event.images.length === 0) {
      repositories.push(key);
      continue;
    }
    const matches = imageMatcher(repo.spec.image);
    if (!matches) {
      skipped.push(`ImageRepository ${key}: spec.image ${repo.spec.image} is not a valid repository`);
      continue;
    }
    const mine = event.images.filter(matches);
    if (mine.length === 0) {
      skipped.push(
        `ImageRepository ${key}: the event is about ${describeImages(event.images)}, not ${repo.spec.image}`,
      );
      continue;
    }
    const tags = mine.flatMap((i) => (i.tag ? [i.tag] : []));
    if (tags.length < mine.length) {
      // The image itself changed without a tag we could check: rescan, as Flux would.
      repositories.push(key);
      continue;
    }
    const policies = [...config.imagePolicies.values()].filter(
      (p) => refKey(p.spec.imageRepositoryRef) === key,
    );
    if (policies.length === 0) {
      skipped.push(`ImageRepository ${key}: no ImagePolicy uses it`);
      continue;
    }
    const selectable = [...new Set(tags)].filter((t) => someoneCouldSelect(policies, repo, t));
    if (selectable.length === 0) {
      skipped.push(
        `ImageRepository ${key}: no ImagePolicy of it could select ${tags.length === 1 ? 'tag' : 'tags'} ${tags.join(', ')}`,
      );
      continue;
    }
    repositories.push(key);
    for (const t of selectable) awaited.push(`${key}:${t}`);
  }

  const triggered = new Set(repositories);
  const automations: string[] = [];
  for (const key of [...automationKeys].sort()) {
    const uses = repositoriesOfAutomation(config, config.automations.get(key)!);
    if (event.images.length === 0 || uses.some((r) => triggered.has(r))) automations.push(key);
    else skipped.push(`ImageUpdateAutomation ${key}: none of its repositories is triggered`);
  }
  return { repositories, automations, tags: awaited.sort(), skipped };
}
