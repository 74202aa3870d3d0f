/**
 * `pawl policy eval --policy FILE --tags FILE`: offline, prints the tag an ImagePolicy selects
 * from a list of tags (SPEC §5). Exit 0 with a tag, 1 when none is selected (and why), 2 when
 * the policy file, a range or a regular expression is invalid.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { imagePolicySchema } from '../../config/index.js';
import { compilePolicy, type PolicySpec } from '../../select/index.js';
import { ConfigError, UsageError, errorMessage } from '../../util/index.js';
import { isValidTag, TAG_RULE } from '../../image/index.js';

/** Flux's default `ImageRepository.spec.exclusionList`. */
export const DEFAULT_EXCLUSION_LIST = ['^.*\\.sig$'];

interface EvalOptions {
  policy?: string;
  tags?: string;
  exclude?: string[] | false;
}

export function register(program: Command): void {
  const policy = program.command('policy').description('work with ImagePolicy objects offline');
  const evalCmd = withGlobalOptions(
    policy
      .command('eval')
      .description(
        'print the tag an ImagePolicy selects from a list of tags (exit 1 and say why when none; 2 when the policy is invalid)',
      )
      .requiredOption('--policy <file>', 'YAML or JSON file holding one ImagePolicy object, or just its spec')
      .requiredOption(
        '--tags <file>',
        'tags, one a line ("-" reads stdin); an optional second column is the build time (RFC 3339) for newestBuild',
      )
      .option(
        '--exclude <pattern>',
        `exclusion list pattern, RE2 (repeatable; replaces the default ${DEFAULT_EXCLUSION_LIST.join(' ')})`,
        (value: string, previous: string[] | false | undefined) => [...(previous || []), value],
      )
      .option('--no-exclude', 'use an empty exclusion list'),
  );
  evalCmd.action(
    action(async (ctx) => {
      const opts = evalCmd.opts<EvalOptions>();
      if (!opts.policy || !opts.tags) throw new UsageError('policy eval needs --policy FILE and --tags FILE');
      const exclusionList = opts.exclude === false ? [] : (opts.exclude ?? DEFAULT_EXCLUSION_LIST);
      return evaluate(ctx, opts.policy, opts.tags, exclusionList);
    }),
  );
}

async function evaluate(
  ctx: CommandContext,
  policyFile: string,
  tagsFile: string,
  exclusionList: string[],
): Promise<number> {
  const spec = await readPolicy(policyFile);
  const { tags, buildTimes, warnings } = parseTags(await readTags(tagsFile), tagsFile);
  for (const w of warnings) ctx.stderr.write(`pawl: warning: ${w}\n`);

  let compiled;
  try {
    compiled = compilePolicy(spec, exclusionList);
  } catch (err) {
    const where = errorMessage(err).startsWith('exclusionList') ? '--exclude' : policyFile;
    throw new ConfigError([{ location: { file: where }, message: errorMessage(err), severity: 'error' }]);
  }
  const sel = compiled.select(tags, { buildTimes });
  if (ctx.options.json) {
    writeJson(ctx, {
      tag: sel.tag,
      error: sel.error,
      candidates: sel.candidates,
      excluded: sel.excluded,
      filteredOut: sel.filteredOut,
      unparsable: sel.unparsable,
      outOfRange: sel.outOfRange,
      warnings,
    });
  } else if (sel.tag !== null) {
    writeLine(ctx, sel.tag);
  }
  if (sel.tag === null) {
    ctx.stderr.write(`pawl: no tag selected: ${sel.error ?? 'no candidate'}\n`);
    return 1;
  }
  return 0;
}

function configError(file: string, message: string, line?: number): ConfigError {
  return new ConfigError([
    { location: line === undefined ? { file } : { file, line }, message, severity: 'error' },
  ]);
}

/** Reads one ImagePolicy (or its bare spec) and validates it with the configuration schema. */
async function readPolicy(file: string): Promise<PolicySpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --policy ${file}: ${errorMessage(err)}`);
  }
  const docs = parseAllDocuments(text, { logLevel: 'error' });
  if (!Array.isArray(docs)) throw configError(file, 'not a YAML or JSON document');
  const values: unknown[] = [];
  for (const doc of docs) {
    const err = doc.errors[0];
    if (err)
      throw configError(file, `not valid YAML: ${err.message.split('\n')[0] ?? ''}`, err.linePos?.[0].line);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) values.push(value);
  }
  const policies = values.filter((v) => isRecord(v) && v.kind === 'ImagePolicy');
  const candidates = policies.length > 0 ? policies : values;
  if (candidates.length !== 1) {
    throw configError(
      file,
      `holds ${candidates.length} ${policies.length > 0 ? 'ImagePolicy objects' : 'documents'}; give a file with exactly one ImagePolicy or one spec`,
    );
  }
  const raw = candidates[0];
  if (!isRecord(raw)) throw configError(file, 'is not an ImagePolicy object or spec (expected a mapping)');
  const isObject = raw.kind !== undefined || raw.spec !== undefined;
  const metadata = isObject && isRecord(raw.metadata) ? raw.metadata : {};
  const spec = isObject ? raw.spec : raw;
  if (!isRecord(spec))
    throw configError(
      file,
      'has no spec; expected an ImagePolicy or its spec (policy: {semver: {range: …}})',
    );
  // The schema needs a whole object; a bare spec gets placeholder names it never reports on.
  const candidate = {
    apiVersion:
      isObject && typeof raw.apiVersion === 'string' ? raw.apiVersion : 'image.toolkit.fluxcd.io/v1',
    kind: 'ImagePolicy',
    metadata: { name: 'eval', ...metadata },
    spec: { imageRepositoryRef: { name: 'eval' }, ...spec },
  };
  const parsed = imagePolicySchema.safeParse(candidate);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i: z.core.$ZodIssue) => ({
        location: { file },
        message: `${(isObject ? ['spec'] : []).concat(i.path.slice(1).map(String)).join('.') || 'policy'}: ${i.message}`,
        severity: 'error' as const,
      })),
    );
  }
  return { policy: parsed.data.spec.policy, filterTags: parsed.data.spec.filterTags };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function readTags(file: string): Promise<string> {
  try {
    if (file !== '-') return await readFile(file, 'utf8');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin)
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
    return Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    throw new UsageError(`cannot read --tags ${file}: ${errorMessage(err)}`);
  }
}

/**
 * One tag a line, blank lines ignored; an optional second column is the tag's build time. A
 * line that no registry could list (`-62` from Flux's own tables) is evaluated all the same, as
 * Flux's policy code takes any string, and named in `warnings`.
 */
export function parseTags(
  text: string,
  file: string,
): { tags: string[]; buildTimes: Map<string, Date>; warnings: string[] } {
  const tags: string[] = [];
  const warnings: string[] = [];
  const buildTimes = new Map<string, Date>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    const [tag, time, extra] = line.split(/\s+/);
    if (extra !== undefined)
      throw new UsageError(
        `${file}:${i + 1}: expected "TAG" or "TAG BUILD-TIME", got ${JSON.stringify(line)}`,
      );
    if (!isValidTag(tag!))
      warnings.push(
        `${file}:${i + 1}: ${JSON.stringify(tag)} is not a tag a registry could list (${TAG_RULE}); evaluated anyway, as Flux's policy code would`,
      );
    tags.push(tag!);
    if (time !== undefined) {
      const when = new Date(time);
      if (Number.isNaN(when.getTime()))
        throw new UsageError(
          `${file}:${i + 1}: ${JSON.stringify(time)} is not a time; use RFC 3339, e.g. 2024-05-01T12:00:00Z`,
        );
      buildTimes.set(tag!, when);
    }
  }
  return { tags, buildTimes, warnings };
}
