/**
 * Errors that reach the user. The exit code is part of the contract (SPEC §5):
 * 2 for bad usage or configuration, 1 for a failure at run time.
 */

/** Where a problem is, in the user's own files. Lines are 1-based. */
export interface Location {
  file: string;
  line?: number;
  /** The kustomization directory whose build produced the object, when kustomize built it. */
  via?: string;
}

/** One configuration problem, rendered as `file:line: kind ns/name: message`. */
export interface Problem {
  location: Location;
  /** e.g. `ImagePolicy apps/podinfo`; empty when the problem is not inside an object. */
  object?: string;
  message: string;
  severity: 'error' | 'warning';
}

/** Control characters, and the Unicode line and paragraph separators. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/**
 * User text (a name, a file name, a value quoted in a message) made safe for one line of a
 * terminal: control characters written JSON-style (`\n`, `\u001b`), so that a name cannot split
 * a line, forge one, or colour the terminal. For text output only; `--json` keeps text exact.
 */
export function printable(s: string): string {
  return s.replace(UNPRINTABLE, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One problem as one line of text: `file:line: [warning:] Kind ns/name: message`, escaped. */
export function formatProblem(p: Problem): string {
  const where = p.location.line ? `${p.location.file}:${p.location.line}` : p.location.file;
  const obj = p.object ? ` ${p.object}:` : '';
  const sev = p.severity === 'warning' ? ' warning:' : '';
  return printable(`${where}:${sev}${obj} ${p.message}`);
}

export abstract class PawlError extends Error {
  abstract readonly exitCode: 1 | 2;
}

/** Bad command line. */
export class UsageError extends PawlError {
  readonly exitCode = 2 as const;
  override name = 'UsageError';
}

/** Bad configuration: carries every problem found, not just the first. */
export class ConfigError extends PawlError {
  readonly exitCode = 2 as const;
  override name = 'ConfigError';
  constructor(readonly problems: Problem[]) {
    super(
      problems
        .filter((p) => p.severity === 'error')
        .map(formatProblem)
        .join('\n') || 'invalid configuration',
    );
  }
}

/** Something failed while running: registry, git, filesystem. */
export class RuntimeError extends PawlError {
  readonly exitCode = 1 as const;
  override name = 'RuntimeError';
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
