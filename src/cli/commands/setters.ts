import type { Command } from 'commander';
import { basename, dirname, resolve } from 'node:path';
import { stat } from 'node:fs/promises';
import { withGlobalOptions, writeJson, writeLine } from '../context.js';
import { action } from '../action.js';
import { UsageError } from '../../util/index.js';
import { isValidTag, TAG_RULE } from '../../image/index.js';
import { applySetters, parseImage, type ImageValue } from '../../write/index.js';

/** `--image NS:POLICY=NAME:TAG[@DIGEST]`, repeatable; a policy given twice with different images is bad usage. */
export function parseImageOptions(values: readonly string[]): Map<string, ImageValue> {
  const images = new Map<string, ImageValue>();
  const given = new Map<string, string>();
  for (const v of values) {
    const eq = v.indexOf('=');
    const policy = eq < 0 ? '' : v.slice(0, eq);
    const ref = eq < 0 ? '' : v.slice(eq + 1);
    const parts = policy.split(':');
    if (parts.length !== 2 || parts.some((p) => p === '' || /[\s/]/.test(p))) {
      throw new UsageError(
        `--image "${v}": expected NAMESPACE:POLICY=NAME:TAG[@DIGEST], e.g. apps:podinfo=ghcr.io/org/podinfo:6.5.0`,
      );
    }
    let image: ImageValue;
    try {
      image = parseImage(ref);
    } catch (err) {
      throw new UsageError(`--image "${v}": ${err instanceof Error ? err.message : String(err)}`);
    }
    if (image.tag !== undefined && !isValidTag(image.tag)) {
      throw new UsageError(
        `--image ${JSON.stringify(v)}: ${JSON.stringify(image.tag)} is not a tag; ${TAG_RULE}`,
      );
    }
    const prev = given.get(policy);
    if (prev !== undefined && prev !== ref) {
      throw new UsageError(
        `--image: policy ${policy} given twice (${prev} and ${ref}); give each policy once`,
      );
    }
    given.set(policy, ref);
    images.set(policy, image);
  }
  return images;
}

export function register(program: Command): void {
  const group = program
    .command('setters')
    .description('Flux setter markers (# {"$imagepolicy": "NS:POLICY"})');
  const apply = withGlobalOptions(
    group
      .command('apply')
      .description(
        'Write images into the setter markers under PATH, as Flux would (no guard), and print what changed',
      )
      .argument('<path>', 'directory (or file) to update')
      .option(
        '--image <ns:policy=name:tag[@digest]>',
        'image selected for a policy (repeatable)',
        (v: string, prev: string[]) => [...prev, v],
        [] as string[],
      )
      .option('--dry-run', 'print the changes without writing'),
  );
  apply.action(
    action(async (ctx, path: string) => {
      const opts = apply.opts<{ image: string[]; dryRun?: boolean }>();
      const images = parseImageOptions(opts.image);
      if (images.size === 0) ctx.log.warn('no --image given; nothing can change');
      const target = resolve(path);
      let st;
      try {
        st = await stat(target);
      } catch {
        throw new UsageError(`${path}: no such file or directory`);
      }
      // A single file is updated as the tree of its directory restricted to that file.
      const [root, updatePath] = st.isDirectory() ? [target, '.'] : [dirname(target), basename(target)];
      const result = await applySetters(root, updatePath, images, { dryRun: opts.dryRun === true });
      for (const w of result.warnings) ctx.stderr.write(`pawl: warning: ${w.file}: ${w.message}\n`);
      if (ctx.options.json) {
        writeJson(ctx, {
          changes: result.changes,
          errors: result.errors,
          warnings: result.warnings,
          filesWritten: result.filesWritten,
          dryRun: opts.dryRun === true,
        });
      } else {
        if (result.changes.length === 0) writeLine(ctx, 'no changes');
        for (const c of result.changes)
          writeLine(ctx, `${c.file}:${c.line} ${c.setter} ${c.old} -> ${c.new}`);
      }
      for (const e of result.errors) ctx.stderr.write(`pawl: ${e.file}: ${e.message}\n`);
      if (
        result.errors.length > 0 &&
        result.filesWritten.length === 0 &&
        result.changes.length > 0 &&
        !opts.dryRun
      ) {
        ctx.stderr.write('pawl: nothing was written; fix the files above and run again\n');
      }
      return result.errors.length > 0 ? 1 : 0;
    }),
  );
}
