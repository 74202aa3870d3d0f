/**
 * Whether the loaded configuration is fit to report ready. A daemon whose every automation was
 * skipped (an invalid object, or one that needs a Secret it could not find) would answer 200 and
 * never push: a rollout must not count that as healthy (issue 22). One bad automation among good
 * ones stays ready, as `pawl run` goes on with the good ones.
 */
import type { Config, SkippedObject } from '../config/index.js';

/** Null when ready as far as the configuration goes; else why not, in one sentence. */
export function configUnready(loaded: { config: Config; skipped: readonly SkippedObject[] }): string | null {
  if (loaded.config.automations.size > 0) return null;
  const skipped = loaded.skipped.filter((s) => s.kind === 'ImageUpdateAutomation');
  if (skipped.length === 0) return null;
  const names = skipped.map(
    (s) =>
      `${s.kind} ${s.namespace}/${s.name} (${s.reason === 'invalid' ? 'invalid' : `needs ${s.dependsOn}`})`,
  );
  return `every ImageUpdateAutomation is skipped: ${names.join(', ')}; the log and /api/v1/status name the errors (pawl validate names the same)`;
}
