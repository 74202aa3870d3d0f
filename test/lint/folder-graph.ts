/**
 * The folder graph of src/: which top folder imports which, counting every import the
 * TypeScript parser finds (values and types, `export … from`, `import()` and `import('…')` types),
 * with the first import that makes each edge, so a cycle can be named by the lines that close it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** One import from one folder into another: where it is written and what it names. */
export interface FolderImport {
  /** Path of the importing file, relative to the root given to `folderGraph`. */
  file: string;
  line: number;
  specifier: string;
}

/** folder → folder it imports → the first import that does. */
export type FolderGraph = Map<string, Map<string, FolderImport>>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    // boundaries.test.ts writes its lint fixtures into src/ for a moment, breaking the rule on
    // purpose: when the two files run side by side, they are not the tree's imports.
    return e.isFile() && e.name.endsWith('.ts') && !e.name.startsWith('lint-fixture-') ? [p] : [];
  });
}

/** Every module specifier of a file with the line it is on. */
export function importsOf(path: string, text: string): { specifier: string; line: number }[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: { specifier: string; line: number }[] = [];
  const add = (node: ts.Node | undefined): void => {
    if (node && ts.isStringLiteralLike(node))
      found.push({
        specifier: node.text,
        line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      add(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      add(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The graph of the top folders below `root/src`; imports inside a folder and of packages are no edges. */
export function folderGraph(root: string): FolderGraph {
  const src = join(root, 'src');
  const folderOf = (path: string): string | null => {
    const rel = relative(src, path);
    return rel.startsWith('..') || !rel.includes(sep) ? null : rel.split(sep)[0]!;
  };
  const graph: FolderGraph = new Map();
  for (const file of sourceFiles(src).sort()) {
    const from = folderOf(file)!;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const { specifier, line } of importsOf(file, readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const to = folderOf(resolve(dirname(file), specifier));
      if (to === null || to === from || graph.get(from)!.has(to)) continue;
      graph.get(from)!.set(to, { file: relative(root, file).split(sep).join('/'), line, specifier });
    }
  }
  return graph;
}

/** The folders of one cycle, the first repeated at the end (`[a, b, a]`), or null when there is none. */
export function findCycle(graph: FolderGraph): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (folder: string): string[] | null => {
    state.set(folder, 'open');
    path.push(folder);
    for (const next of [...(graph.get(folder)?.keys() ?? [])].sort()) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    path.pop();
    state.set(folder, 'done');
    return null;
  };
  for (const folder of [...graph.keys()].sort()) {
    if (state.has(folder)) continue;
    const cycle = visit(folder);
    if (cycle) return cycle;
  }
  return null;
}

/** `a/ → b/ (src/a/x.ts:3 '../b/index.js')`, one line per edge of the cycle. */
export function describeCycle(graph: FolderGraph, cycle: readonly string[]): string {
  return cycle
    .slice(1)
    .map((to, i) => {
      const from = cycle[i]!;
      const via = graph.get(from)!.get(to)!;
      return `${from}/ → ${to}/ (${via.file}:${via.line} '${via.specifier}')`;
    })
    .join('\n');
}
