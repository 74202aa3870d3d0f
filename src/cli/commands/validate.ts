import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine } from '../context.js';
import { action } from '../action.js';
import { dependencyProblems, loadConfig, KIND_NAMES, configMapOf, objectCount } from '../../config/index.js';
import { formatProblem, type Problem } from '../../util/index.js';
import { configJson, loadOptions, shownPaths } from '../config.js';
import { markerProblems } from '../../run/index.js';

export function register(program: Command): void {
  withGlobalOptions(
    program
      .command('validate')
      .description(
        'load and check all configuration objects; report every problem with file:line (exit 2 on errors)',
      ),
  ).action(
    action(async (ctx) => {
      const loaded = await loadConfig(ctx.options.config, loadOptions(ctx));
      const { config } = loaded;
      // Markers that point nowhere are warnings: Flux ignores them without a word.
      const defined = [
        ...config.imagePolicies.keys(),
        ...loaded.skipped.filter((s) => s.kind === 'ImagePolicy').map((s) => `${s.namespace}/${s.name}`),
      ];
      const markers = await markerProblems(config, defined);
      const { problems, skipped } = shownPaths({
        problems: [...loaded.problems, ...nothingKnown(ctx.options.config, loaded), ...markers],
        skipped: loaded.skipped,
      });
      const objects: Record<string, number> = {};
      for (const kind of KIND_NAMES) objects[kind] = config[configMapOf(kind)].size;
      const errors = problems.filter((p) => p.severity === 'error').length;
      const warnings = problems.length - errors;
      if (ctx.options.json) {
        writeJson(ctx, {
          objects,
          ...configJson({ problems, skipped }),
        });
      } else {
        for (const p of [...problems, ...dependencyProblems(skipped)]) writeLine(ctx, formatProblem(p));
        const counts = KIND_NAMES.filter((k) => objects[k]! > 0).map((k) => `${objects[k]} ${k}`);
        const plural = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`;
        const usable = counts.length ? counts.join(', ') : 'no objects';
        const left: Record<string, number> = {};
        for (const s of skipped) left[s.kind] = (left[s.kind] ?? 0) + 1;
        const leftOut = Object.entries(left).map(([k, n]) => `${n} ${k}`);
        // The counts are of the objects pawl would act on: with errors, say so, and what is left out.
        writeLine(
          ctx,
          errors > 0
            ? `invalid: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}; usable: ${usable}${leftOut.length ? `; skipped: ${leftOut.join(', ')}` : ''}`
            : `valid: ${usable}; ${plural(errors, 'error')}, ${plural(warnings, 'warning')}`,
        );
      }
      return errors > 0 ? 2 : 0;
    }),
  );
}

/**
 * A configuration in which pawl found none of its objects — not even an invalid one — is an
 * error of its own: `-c` an empty, truncated or garbage file, or the wrong directory, must not
 * pass as "valid". When the files already have errors, those say enough.
 */
function nothingKnown(paths: readonly string[], loaded: Awaited<ReturnType<typeof loadConfig>>): Problem[] {
  const { config, problems, skipped } = loaded;
  if (objectCount(config) > 0 || skipped.length > 0 || problems.some((p) => p.severity === 'error'))
    return [];
  return paths.map((file) => ({
    location: { file },
    severity: 'error' as const,
    message: `holds no object pawl knows (none of ${KIND_NAMES.join(', ')}); point -c at the Flux objects pawl should act on`,
  }));
}
