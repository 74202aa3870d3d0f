/**
 * Loading the configuration for a command that acts on it (everything but `validate`): an
 * invalid object is reported and skipped with what needs it, the rest runs, and the command
 * then exits at least 1 (SPEC §2). `--strict` keeps all-or-nothing: any error is exit 2.
 */
import {
  loadConfig,
  resolveObject,
  type Config,
  type Kind,
  type LoadOptions,
  type SkippedObject,
} from '../config/index.js';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import {
  ConfigError,
  UsageError,
  formatProblem,
  printable,
  type Location,
  type Problem,
} from '../util/index.js';
import type { CommandContext } from './context.js';

export interface CommandConfig {
  config: Config;
  problems: Problem[];
  skipped: SkippedObject[];
  /** 1 when anything in the configuration was wrong (an object skipped, a file unreadable); else 0. */
  exitFloor: 0 | 1;
}

export async function loadCommandConfig(ctx: CommandContext): Promise<CommandConfig> {
  const loaded = await loadConfig(ctx.options.config, loadOptions(ctx));
  const { config } = loaded;
  const { problems, skipped } = shownPaths(loaded);
  const errors = problems.filter((p) => p.severity === 'error');
  if (ctx.options.strict && errors.length > 0) throw new ConfigError(problems);
  for (const w of problems) if (w.severity === 'warning') ctx.log.warn(formatProblem(w));
  for (const e of errors) ctx.stderr.write(`pawl: ${formatProblem(e)}\n`);
  for (const s of skipped) ctx.stderr.write(`pawl: skipped ${skippedLine(s)}\n`);
  return { config, problems, skipped, exitFloor: errors.length > 0 ? 1 : 0 };
}

/**
 * A path as messages show it: relative to the working directory when it lies under it, else
 * absolute; the same file is never written both ways (the walk keeps `-c`'s spelling, builds
 * and canonical paths are absolute).
 */
export function shownPath(p: string, cwd = process.cwd()): string {
  const abs = resolve(cwd, p);
  const rel = relative(cwd, abs);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
}

/** Problems and skipped objects with every path, in locations and in messages, as `shownPath` words it. */
export function shownPaths<T extends Pick<CommandConfig, 'problems' | 'skipped'>>(
  c: T,
  cwd = process.cwd(),
): T {
  const under = cwd.endsWith(sep) ? cwd : cwd + sep;
  const text = (m: string): string => m.replaceAll(under, '');
  const location = (l: Location): Location => ({
    ...l,
    file: shownPath(l.file, cwd),
    ...(l.via ? { via: shownPath(l.via, cwd) } : {}),
  });
  return {
    ...c,
    problems: c.problems.map((p) => ({ ...p, location: location(p.location), message: text(p.message) })),
    skipped: c.skipped.map((s) => ({ ...s, location: location(s.location), message: text(s.message) })),
  };
}

/** Where the loader looks for Secrets and how it runs kustomize, from the command's options. */
export function loadOptions(ctx: CommandContext): LoadOptions {
  return {
    secrets: { ...(ctx.options.secretsDir ? { dir: ctx.options.secretsDir } : {}), env: process.env },
  };
}

function skippedLine(s: SkippedObject): string {
  const where = s.location.line ? `${s.location.file}:${s.location.line}` : s.location.file;
  return printable(
    s.reason === 'invalid'
      ? `${s.kind} ${s.namespace}/${s.name} (${where}): invalid, see above`
      : `${s.kind} ${s.namespace}/${s.name} (${where}): needs ${s.dependsOn}, which is skipped`,
  );
}

/** The configuration part of every command's `--json` output (documented in docs/cli.md). */
export function configJson(c: Pick<CommandConfig, 'problems' | 'skipped'>): {
  problems: unknown[];
  skipped: unknown[];
} {
  return {
    problems: c.problems.map(problemJson),
    skipped: c.skipped.map((s) => ({
      kind: s.kind,
      name: `${s.namespace}/${s.name}`,
      file: s.location.file,
      line: s.location.line || null,
      reason: s.reason,
      dependsOn: s.dependsOn,
      message: s.message,
    })),
  };
}

export function problemJson(p: Problem): Record<string, unknown> {
  return {
    file: p.location.file,
    line: p.location.line || null,
    object: p.object ?? null,
    severity: p.severity,
    message: p.message,
  };
}

/**
 * `resolveObject`, except that a name given on the command line whose object is skipped is a
 * configuration error about that very object (exit 2), not "no such object".
 */
export function resolveNamed<T>(c: CommandConfig, map: Map<string, T>, name: string, kind: Kind): T {
  try {
    return resolveObject(map, name, kind);
  } catch (err) {
    if (err instanceof UsageError) refuseSkipped(c, kind, name);
    throw err;
  }
}

function refuseSkipped(c: CommandConfig, kind: Kind, name: string): void {
  const hit = c.skipped.find(
    (s) =>
      s.kind === kind && (`${s.namespace}/${s.name}` === name || (!name.includes('/') && s.name === name)),
  );
  if (!hit) return;
  throw new ConfigError([
    {
      location: hit.location,
      object: `${hit.kind} ${hit.namespace}/${hit.name}`,
      severity: 'error',
      message: `skipped: ${hit.message}`,
    },
  ]);
}
