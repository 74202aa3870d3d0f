/** What needs a person, folded, and what the page says when nothing does. */
import { REASON_LABELS, reasonMeaning, type Reason } from '../../guard/index.js';
import type { AttentionItem, Calm, DashboardSource, MarkerState, PolicyView } from './types.js';

/** Identical problems (same state and words) are one item with a count, in the first one's place. */
export function foldAttention(items: readonly Omit<AttentionItem, 'count' | 'others'>[]): AttentionItem[] {
  const out: AttentionItem[] = [];
  const byWords = new Map<string, AttentionItem>();
  for (const item of items) {
    const key = `${item.state}\u0000${item.why}`;
    const seen = byWords.get(key);
    if (seen) {
      seen.count++;
      seen.others.push({ title: item.title, href: item.href });
      continue;
    }
    const folded = { ...item, count: 1, others: [] };
    byWords.set(key, folded);
    out.push(folded);
  }
  return out;
}

/** The empty attention list's words, from what runs and what the passes decided. */
export function calmWords(c: {
  paths: readonly string[];
  automations: number;
  suspended: number;
  policies: number;
  repositories: number;
  passes: number;
  markers: number;
}): Calm {
  const where = c.paths.length > 0 ? c.paths.join(', ') : 'no -c path (the working directory)';
  if (c.automations === 0) {
    const found =
      c.policies + c.repositories === 0
        ? 'no ImageRepository, ImagePolicy or ImageUpdateAutomation'
        : `${c.repositories} ImageRepository and ${c.policies} ImagePolicy objects but no ImageUpdateAutomation`;
    return {
      kind: 'nothing-configured',
      text: `Nothing is configured: pawl found ${found} in ${where}, so it updates nothing. Point -c at the directory with your Flux image automation objects (pawl validate -c DIR lists what it finds).`,
    };
  }
  if (c.suspended === c.automations)
    return {
      kind: 'all-suspended',
      text: `Every ImageUpdateAutomation (${c.automations}) is suspended (spec.suspend: true), so pawl writes nothing.`,
    };
  if (c.markers === 0 && c.passes === 0)
    return {
      kind: 'no-pass-yet',
      text: 'No pass has decided anything yet: the marked lines appear here after the first one.',
    };
  if (c.markers === 0)
    return {
      kind: 'no-markers',
      text: `The automations found no marked line in their update paths, so there is nothing to update. A marker is a comment such as # {"$imagepolicy": "NAMESPACE:POLICY"} on the image line.`,
    };
  return { kind: 'all-well', text: 'Nothing needs a person: every line is up to date or upgraded.' };
}

/** Configuration problems come first: they explain whatever else is missing from the page. */
export type AttentionInput = Omit<AttentionItem, 'count' | 'others'>;

export function configurationAttention(c: DashboardSource['configuration']): AttentionInput[] {
  if (!c) return [];
  const errors = c.problems.filter((p) => p.severity === 'error');
  const items: AttentionInput[] = errors.map((p) => ({
    state: 'error',
    title: `${c.refused ? 'Configuration change refused' : 'Configuration'}: ${p.location.file}${p.location.line !== undefined ? `:${p.location.line}` : ''}`,
    why: `${p.object ? `${p.object}: ` : ''}${p.message}`,
    href: '#/',
  }));
  if (c.refused && items.length > 0)
    items[0]!.why += ` (refused at ${c.at.toISOString()}; the configuration before it keeps running)`;
  return items;
}

/** A marker's state from its decision and its policy's situation. */
export function markerState(
  reason: string,
  policy: Pick<PolicyView, 'stale' | 'error' | 'pending'> | undefined,
): MarkerState {
  switch (reason) {
    case 'upgrade':
    case 'retarget':
      return 'upgrade';
    case 'pinned':
      return 'pinned';
    case 'downgrade-blocked':
      return 'downgrade-blocked';
    case 'candidate-missing':
      return 'candidate-missing';
    case 'unverified':
      return 'unverified';
    case 'too-new':
    case 'outside-window':
    case 'batched':
      return 'held';
    case 'up-to-date':
    case 'equivalent':
      return policy?.stale ? 'stale' : 'up-to-date';
    case 'no-candidate':
      return policy?.stale || policy?.pending ? 'stale' : 'error';
    default:
      return 'error';
  }
}

/** What a reason means in general, for the page's explanation of a state. */
export function meaningOf(reason: string): string {
  return reason in REASON_LABELS ? reasonMeaning(reason as Reason) : '';
}
