/**
 * Flux Kustomization `postBuild.substitute`: variables in the built YAML, replaced the way
 * kustomize-controller does before it applies the objects. Supported forms: `${var}`,
 * `${var:=default}`, `${var:-default}` (default when unset or empty), `${var=default}`,
 * `${var-default}` (default when unset); `$${var}` is a literal `${var}`. A `$var` without braces
 * is left as written. A document annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`
 * is left alone.
 */

export interface SubstituteOptions {
  /**
   * What an unset variable without a default becomes: `empty` (Flux's behaviour) or `keep`
   * (left as written; used when some values come from `substituteFrom`, which pawl does not read).
   */
  unset: 'empty' | 'keep';
}

// Linear: every part is a single character class or a literal.
const VARIABLE = /\$(\$?)\{([_A-Za-z][_A-Za-z0-9]*)(?:(:?[-=])([^}]*))?\}/g;
const DISABLED = /kustomize\.toolkit\.fluxcd\.io\/substitute["']?\s*:\s*["']?disabled\b/;
const SEPARATOR = /^---[ \t]*(?:#.*)?$/m;

export function substituteText(
  text: string,
  vars: Readonly<Record<string, string>>,
  opts: SubstituteOptions,
): string {
  return text.replace(
    VARIABLE,
    (whole, escaped: string, name: string, op: string | undefined, fallback: string | undefined) => {
      if (escaped) return whole.slice(1);
      const has = Object.hasOwn(vars, name);
      const value = has ? vars[name]! : undefined;
      if (op !== undefined) {
        const useDefault = op.startsWith(':') ? value === undefined || value === '' : value === undefined;
        return useDefault ? (fallback ?? '') : value!;
      }
      if (value !== undefined) return value;
      return opts.unset === 'keep' ? whole : '';
    },
  );
}

/**
 * Substitutes each YAML document of `text` (keeping every line where it was, so positions
 * still point into the source), except documents that opt out.
 */
export function substituteDocuments(
  text: string,
  vars: Readonly<Record<string, string>>,
  opts: SubstituteOptions,
): string {
  const out: string[] = [];
  let rest = text;
  for (;;) {
    const m = SEPARATOR.exec(rest);
    const doc = m ? rest.slice(0, m.index) : rest;
    out.push(DISABLED.test(doc) ? doc : substituteText(doc, vars, opts));
    if (!m) break;
    out.push(m[0]);
    rest = rest.slice(m.index + m[0].length);
  }
  return out.join('');
}
