/**
 * Go text/template for commit messages, as Flux's image-automation-controller
 * renders them: Go's syntax, built-ins and error words, plus the sprig
 * functions of Flux's HermeticTxtFuncMap.
 */
import { BUILTINS } from './builtins.js';
import type { FuncMap, GoFunc } from './eval.js';
import { Executor } from './exec.js';
import { SPRIG_HERMETIC } from './names.js';
import type { ListNode } from './nodes.js';
import { parse } from './parse.js';
import { SPRIG_FUNCS } from './sprig.js';

/** Go's built-ins, then sprig's functions over them (sprig's `slice` wins, as in Go's lookup order). */
export const TEMPLATE_FUNCS: FuncMap = new Map<string, GoFunc>([...BUILTINS, ...SPRIG_FUNCS]);

export interface Template {
  readonly name: string;
  readonly text: string;
  /** Renders the template over `data`; throws TemplateError with Go's words on a run-time error. */
  execute(data: unknown): string;
}

function checkFunction(name: string): 'defined' | 'undefined' | { unsupported: string } {
  if (TEMPLATE_FUNCS.has(name)) return 'defined';
  if (SPRIG_HERMETIC.includes(name)) {
    return { unsupported: `function ${JSON.stringify(name)} is not supported by pawl (Flux's sprig has it)` };
  }
  return 'undefined';
}

/**
 * Parses a Go text/template. Throws TemplateError worded as Go's parser words
 * it, e.g. `template: commit message:3: unexpected {{end}}`; like Go, an
 * unknown function is a parse error.
 */
export function parseTemplate(text: string, name = 'commit message'): Template {
  const { trees } = parse(name, text, checkFunction);
  const root: ListNode = trees.get(name) ?? { kind: 'list', pos: 0, nodes: [] };
  return {
    name,
    text,
    execute(data: unknown): string {
      return new Executor(name, text, trees, TEMPLATE_FUNCS).run(root, data);
    },
  };
}
