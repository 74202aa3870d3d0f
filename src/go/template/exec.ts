/**
 * The executor of Go's text/template (text/template/exec.go, Go 1.22) over the
 * value model of values.ts: same evaluation order, same argument checks, same
 * error words and locations. This file walks the tree (exec.go's walk functions);
 * eval.ts evaluates the pipelines in it, state.ts keeps the variables and the output.
 */
import { Evaluator, type FuncMap } from './eval.js';
import { formatValue } from './fmt.js';
import type { BranchNode, ListNode, Node, RangeNode, TemplateNode } from './nodes.js';
import { nodeString } from './nodes.js';
import { asGoMap, isTrue, kindOf, sortedEntries, typeName } from './values.js';

/** {{break}} and {{continue}} unwind to their {{range}} as exceptions, as Go's panics do. */
class BreakSignal extends Error {}
class ContinueSignal extends Error {}

const MAX_EXEC_DEPTH = 100000;

export class Executor extends Evaluator {
  private depth = 0;

  constructor(
    name: string,
    text: string,
    private readonly trees: ReadonlyMap<string, ListNode>,
    funcs: FuncMap,
  ) {
    super(name, text, funcs);
  }

  run(root: ListNode, data: unknown): string {
    this.begin(data);
    this.walk(data, root);
    return this.output();
  }

  // --- walking ------------------------------------------------------------

  private walk(dot: unknown, node: Node): void {
    this.at(node);
    this.step();
    switch (node.kind) {
      case 'action': {
        const val = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) this.printValue(node, val);
        return;
      }
      case 'break':
        throw new BreakSignal();
      case 'continue':
        throw new ContinueSignal();
      case 'if':
      case 'with':
        this.walkIfOrWith(node.kind, dot, node);
        return;
      case 'list':
        for (const n of node.nodes) this.walk(dot, n);
        return;
      case 'range':
        this.walkRange(dot, node);
        return;
      case 'template':
        this.walkTemplate(dot, node);
        return;
      case 'text':
        this.emit(node.text);
        return;
      default:
        this.errorf(`unknown node: ${nodeString(node)}`);
    }
  }

  private walkIfOrWith(kind: 'if' | 'with', dot: unknown, node: BranchNode): void {
    const mark = this.mark();
    try {
      const val = this.evalPipeline(dot, node.pipe);
      const truth = isTrue(val);
      if (truth === null) this.errorf(`if/with can't use ${formatValue(val, 'v')}`);
      if (truth) {
        this.walk(kind === 'with' ? val : dot, node.list);
      } else if (node.elseList) {
        this.walk(dot, node.elseList);
      }
    } finally {
      this.pop(mark);
    }
  }

  private walkRange(dot: unknown, r: RangeNode): void {
    this.at(r);
    const outer = this.mark();
    try {
      const val = this.evalPipeline(dot, r.pipe);
      const mark = this.mark();
      const oneIteration = (index: unknown, elem: unknown): 'break' | 'continue' => {
        this.step();
        const decl = r.pipe.decl;
        if (decl.length > 0) {
          if (r.pipe.isAssign) {
            if (decl.length > 1) this.setVar(decl[0]!.ident[0]!, index);
            else this.setVar(decl[0]!.ident[0]!, elem);
          } else {
            this.setTopVar(1, elem);
          }
        }
        if (decl.length > 1) {
          if (r.pipe.isAssign) this.setVar(decl[1]!.ident[0]!, elem);
          else this.setTopVar(2, index);
        }
        try {
          this.walk(elem, r.list);
        } catch (e) {
          if (e instanceof BreakSignal) return 'break';
          if (!(e instanceof ContinueSignal)) throw e;
        } finally {
          this.pop(mark);
        }
        return 'continue';
      };
      let iterated = false;
      switch (kindOf(val)) {
        case 'slice': {
          const arr = val as unknown[];
          iterated = arr.length > 0;
          for (let i = 0; i < arr.length; i++) if (oneIteration(i, arr[i]) === 'break') break;
          break;
        }
        case 'map': {
          const m = asGoMap(val)!;
          iterated = m.entries.size > 0;
          for (const [k, v] of sortedEntries(m)) if (oneIteration(k, v) === 'break') break;
          break;
        }
        case 'int':
        case 'int64': {
          const n = Number(val);
          if (r.pipe.decl.length > 1)
            this.errorf(`can't use ${formatValue(val, 'v')} to iterate over more than one variable`);
          iterated = n > 0;
          for (let i = 0; i < n; i++) if (oneIteration(i, i) === 'break') break;
          break;
        }
        case 'invalid':
          break;
        default:
          this.errorf(`range can't iterate over ${formatValue(val, 'v')}`);
      }
      if (!iterated && r.elseList) this.walk(dot, r.elseList);
    } finally {
      this.pop(outer);
    }
  }

  private walkTemplate(dot: unknown, t: TemplateNode): void {
    this.at(t);
    const tree = this.trees.get(t.name);
    if (!tree) this.errorf(`template ${JSON.stringify(t.name)} not defined`);
    const newDot = this.evalPipeline(dot, t.pipe);
    if (++this.depth >= MAX_EXEC_DEPTH) this.errorf(`exceeded maximum template depth (${MAX_EXEC_DEPTH})`);
    const savedVars = this.vars;
    this.vars = [{ name: '$', value: newDot }];
    try {
      this.walk(newDot, tree);
    } finally {
      this.vars = savedVars;
      this.depth--;
    }
  }

  private printValue(n: Node, v: unknown): void {
    this.at(n);
    if (v === undefined || v === null) {
      this.emit('<no value>');
      return;
    }
    if (typeof v === 'function') this.errorf(`can't print ${nodeString(n)} of type ${typeName(v)}`);
    this.emit(formatValue(v, 'v'));
  }
}
