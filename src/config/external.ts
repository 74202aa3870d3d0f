/**
 * The checks that belong to other modules (template syntax lives with the commit writer).
 * TODO(config): switch to a static `import { parseTemplate } from '../git/template/index.js'`
 * once that module exists; until then a missing module means messageTemplate is not checked.
 */
let parseTemplateFn: ((text: string) => unknown) | undefined;
let loaded = false;

export async function loadExternalChecks(): Promise<void> {
  if (loaded) return;
  loaded = true;
  const specifier = '../git/template/index.js';
  try {
    const mod = (await import(specifier)) as { parseTemplate?: unknown };
    if (typeof mod.parseTemplate === 'function') parseTemplateFn = mod.parseTemplate as (text: string) => unknown;
  } catch {
    parseTemplateFn = undefined;
  }
}

/** Throws an Error with the position when `text` is not a valid Go template. */
export function checkTemplate(text: string): void {
  parseTemplateFn?.(text);
}
