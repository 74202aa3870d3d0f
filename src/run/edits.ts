/**
 * The edits of a pass: every marker's decision (what the report and the store are projections
 * of), and the new values spliced into the files byte for byte.
 */
import { posix } from 'node:path';
import type { TemplateChange } from '../config/index.js';
import type { Workspace } from '../git/index.js';
import { rewriteFileSync, rewrite, splice, writeSpliceSync } from '../write/index.js';
import { RuntimeError } from '../util/index.js';
import type { MarkerPlan, TreePlan } from './plan.js';
import { objectsAt } from './objects.js';
import type { MarkerDecision } from './report.js';

/** One marked value to write. */
export interface Edit {
  plan: MarkerPlan;
  value: string;
}

/** Every marker's decision, once: the report's rows and the store's records are projections of it. */
export function summarise(plan: TreePlan, edits: readonly Edit[]): MarkerDecision[] {
  const writing = new Map(edits.map((e) => [e.plan, e.value]));
  // Whole literals, not a shared part spread into each: a daemon decides every marker of the
  // configuration each pass, and spreading made each decision several objects.
  return plan.plans.map((p): MarkerDecision => {
    const value = writing.get(p);
    const { decision, marker } = p;
    return value !== undefined
      ? {
          file: marker.file,
          line: marker.line,
          setter: marker.setter,
          policy: p.policy,
          action: 'write',
          current: marker.value,
          candidate: value,
          reason: decision.action === 'write' ? decision.reason : 'rollback',
          detail: '',
        }
      : {
          file: marker.file,
          line: marker.line,
          setter: marker.setter,
          policy: p.policy,
          action: 'keep',
          current: marker.value,
          candidate: p.outcome.candidate?.tag ?? null,
          reason: decision.action === 'keep' ? decision.reason : 'up-to-date',
          detail: decision.detail,
        };
  });
}

/**
 * Splices the new values into each file (only the marked scalars' bytes) and writes the changed
 * bytes in place. `prior`: edits already written to these files (an earlier commit of the same
 * pass); the markers' offsets are the scanned text's, so each write is spliced over the scanned
 * text with the prior edits and checked against the file as those left it.
 */
export async function writeEdits(
  ws: Workspace,
  plan: TreePlan,
  edits: readonly Edit[],
  updatePath: string,
  needObjects: boolean,
  prior: readonly Edit[] = [],
): Promise<TemplateChange[]> {
  // Flux keys `.Changed.FileChanges` by paths relative to `spec.update.path`.
  const base = posix.normalize(updatePath.replace(/^\.\/?/, '') || '.');
  const byFile = new Map<string, Edit[]>();
  for (const e of edits) byFile.set(e.plan.marker.file, [...(byFile.get(e.plan.marker.file) ?? []), e]);
  const changes: TemplateChange[] = [];
  const files = new Map(plan.files.map((f) => [f.file, f]));
  let written = 0;
  for (const [file, fileEdits] of byFile) {
    // Let the daemon's other work in between files now and then.
    if (++written % 64 === 0) await new Promise((r) => setImmediate(r));
    const scanned = files.get(file);
    if (!scanned) throw new RuntimeError(`internal error: ${file} was not scanned in ${ws.dir}`);
    const objects = needObjects
      ? objectsAt(
          scanned.text,
          fileEdits.map((e) => e.plan.marker.start),
        )
      : fileEdits.map(() => ({ kind: '', namespace: '', name: '' }));
    const before = prior.filter((e) => e.plan.marker.file === file);
    const values = (es: readonly Edit[]) => es.map((e) => ({ marker: e.plan.marker, value: e.value }));
    // The file as scanned: only the span the edits change is written. After earlier edits of
    // this pass the file holds their text, and the two texts are compared.
    if (before.length === 0)
      writeSpliceSync(scanned.path, scanned.text, splice(scanned.text, values(fileEdits)));
    else
      rewriteFileSync(
        scanned.path,
        rewrite(scanned.text, values(before)),
        rewrite(scanned.text, values([...before, ...fileEdits])),
      );
    fileEdits.forEach((e, i) =>
      changes.push({
        file: posix.relative(base === '.' ? '' : base, file),
        object: objects[i]!,
        oldValue: e.plan.marker.value,
        newValue: e.value,
        setter: e.plan.marker.setter,
      }),
    );
  }
  return changes;
}
