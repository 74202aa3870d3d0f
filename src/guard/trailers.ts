/**
 * Commit trailers pawl writes and reads. Git is the record of intent (SPEC §4, §7): a rollback
 * commit says which policy it pins and why, a release commit says which pin it lifts, so both
 * survive the loss of the state directory.
 */

/** Marks a commit as made by pawl (`ns/name` of the automation); push uses it to decide what pawl may overwrite. */
export const TRAILER_AUTOMATION = 'Pawl-Automation';
/** `ns/name` of each policy whose markers an automation commit updated; repeatable. */
export const TRAILER_UPDATED = 'Pawl-Updated';
/** `ns/name` of the policy whose markers the commit rolled back. */
export const TRAILER_POLICY = 'Pawl-Policy';
/** The value the markers had before the rollback. */
export const TRAILER_OLD = 'Pawl-Old';
/** The value the rollback wrote. */
export const TRAILER_NEW = 'Pawl-New';
/** The person's words (`--reason`). */
export const TRAILER_REASON = 'Pawl-Reason';
/** `ns/name` of a policy whose pin `pawl release` lifted; repeatable in one commit. */
export const TRAILER_RELEASE = 'Pawl-Release';

export type Trailers = ReadonlyArray<{ key: string; value: string }>;

/** Every value of `key` (trailer keys compare case-insensitively, as git does). */
export function trailerValues(trailers: Trailers, key: string): string[] {
  const k = key.toLowerCase();
  return trailers.filter((t) => t.key.toLowerCase() === k).map((t) => t.value);
}

/** The trailer block of a rollback commit, to append after a blank line to the message. */
export function rollbackTrailers(t: { policy: string; old: string; new: string; reason?: string }): string {
  const lines = [
    `${TRAILER_POLICY}: ${oneLine(t.policy)}`,
    `${TRAILER_OLD}: ${oneLine(t.old)}`,
    `${TRAILER_NEW}: ${oneLine(t.new)}`,
  ];
  if (t.reason !== undefined && t.reason.trim() !== '') lines.push(`${TRAILER_REASON}: ${oneLine(t.reason)}`);
  return lines.join('\n');
}

/** The trailer block of a release commit (one line per released policy). */
export function releaseTrailers(policies: readonly string[]): string {
  return policies.map((p) => `${TRAILER_RELEASE}: ${oneLine(p)}`).join('\n');
}

/** True when the trailers mark a rollback of `policy` (`ns/name`). */
export function isRollbackOf(trailers: Trailers, policy: string): boolean {
  return trailerValues(trailers, TRAILER_POLICY).includes(policy);
}

/** True when the trailers mark a release of `policy` (`ns/name`). */
export function isReleaseOf(trailers: Trailers, policy: string): boolean {
  return trailerValues(trailers, TRAILER_RELEASE).includes(policy);
}

/**
 * Parses `Key: value` lines as printed by `git log --format=%(trailers:unfold,only)`.
 * Lines that are not trailers are ignored rather than rejected: the message is a person's.
 */
export function parseTrailerLines(text: string): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^([A-Za-z0-9][A-Za-z0-9-]*):\s?(.*)$/.exec(line);
    if (m) out.push({ key: m[1]!, value: m[2]!.trim() });
  }
  return out;
}

// A newline in a trailer value would end the trailer block early and let text forge trailers.
function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
