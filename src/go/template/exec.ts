/**
 * The executor of Go's text/template (text/template/exec.go, Go 1.22) over the
 * value model of values.ts: same evaluation order, same argument checks, same
 * error words and locations.
 */
import { TemplateError } from './errors.js';
import { formatValue } from './fmt.js';
import type {
  BranchNode,
  ChainNode,
  CommandNode,
  FieldNode,
  IdentifierNode,
  ListNode,
  Node,
  NumberNode,
  PipeNode,
  RangeNode,
  TemplateNode,
  VariableNode,
} from './nodes.js';
import { nodeString } from './nodes.js';
import {
  asGoMap,
  goFloat,
  GoMap,
  GoStruct,
  isTrue,
  kindOf,
  paramTypeName,
  sortedEntries,
  structField,
  structMethod,
  typeName,
  type GoMethod,
  type ParamKind,
} from './values.js';

export interface GoFunc {
  params: readonly ParamKind[];
  variadic?: ParamKind;
  /** Returns the result; throws FuncError for Go's error return, anything else for a panic. */
  call: (args: unknown[]) => unknown;
}

export type FuncMap = ReadonlyMap<string, GoFunc>;

const MISSING: unique symbol = Symbol('missing');
type Final = unknown;

/** {{break}} and {{continue}} unwind to their {{range}} as exceptions, as Go's panics do. */
class BreakSignal extends Error {}
class ContinueSignal extends Error {}

const MAX_EXEC_DEPTH = 100000;

/**
 * Bounds on one rendering. A commit message template is configuration: `{{ range until
 * 200000000 }}x{{ end }}` must be a configuration error (pawl validate renders every template over
 * a sample change), not a process that grows to gigabytes and dies. Go has no such bounds; no
 * commit message comes near them.
 */
export const TEMPLATE_LIMITS = {
  /** Characters of output. */
  outputChars: 1 << 20,
  /** Nodes walked plus range iterations. */
  steps: 5_000_000,
  /** Characters of one value a function returns (or builds, for `repeat` and `indent`). */
  valueChars: 1 << 20,
  /** Items of one list a function returns (or builds, for `until`, `untilStep` and `seq`). */
  listItems: 100_000,
} as const;

export class Executor {
  private node: Node | null = null;
  private vars: { name: string; value: unknown }[] = [];
  private out: string[] = [];
  private outChars = 0;
  private steps = 0;
  private depth = 0;

  constructor(
    private readonly name: string,
    private readonly text: string,
    private readonly trees: ReadonlyMap<string, ListNode>,
    private readonly funcs: FuncMap,
  ) {}

  run(root: ListNode, data: unknown): string {
    this.vars = [{ name: '$', value: data }];
    this.out = [];
    this.outChars = 0;
    this.steps = 0;
    this.walk(data, root);
    return this.out.join('');
  }

  // --- errors -------------------------------------------------------------

  private errorf(msg: string): never {
    if (this.node === null) throw new TemplateError(`template: ${this.name}: ${msg}`);
    const pos = this.node.pos;
    const before = this.text.slice(0, pos);
    const nl = before.lastIndexOf('\n');
    const line = before.split('\n').length;
    const byteNum = Buffer.byteLength(nl === -1 ? before : before.slice(nl + 1), 'utf8');
    const location = `${this.name}:${line}:${byteNum}`;
    throw new TemplateError(
      `template: ${location}: executing ${JSON.stringify(this.name)} at <${nodeString(this.node)}>: ${msg}`,
      line,
      byteNum + 1,
    );
  }

  private at(n: Node): void {
    this.node = n;
  }

  // --- bounds (TEMPLATE_LIMITS) --------------------------------------------

  private emit(s: string): void {
    this.outChars += s.length;
    if (this.outChars > TEMPLATE_LIMITS.outputChars)
      this.errorf(
        `the output is longer than ${TEMPLATE_LIMITS.outputChars} characters, more than pawl writes into a commit message`,
      );
    this.out.push(s);
  }

  private step(): void {
    if (++this.steps > TEMPLATE_LIMITS.steps)
      this.errorf(
        `the template took more than ${TEMPLATE_LIMITS.steps} steps (nodes and range iterations), more than pawl spends on a commit message`,
      );
  }

  /** A function's result, checked against the bounds before it is used or kept in a variable. */
  private bounded(name: string, v: unknown, node: Node): unknown {
    const tooLong = typeof v === 'string' && v.length > TEMPLATE_LIMITS.valueChars;
    const tooMany = Array.isArray(v) && v.length > TEMPLATE_LIMITS.listItems;
    if (!tooLong && !tooMany) return v;
    this.at(node);
    if (typeof v === 'string')
      this.errorf(
        `${name} returned ${v.length} characters; a value may have at most ${TEMPLATE_LIMITS.valueChars}`,
      );
    this.errorf(
      `${name} returned ${(v as unknown[]).length} items; a list may have at most ${TEMPLATE_LIMITS.listItems}`,
    );
    return v;
  }

  // --- variables ----------------------------------------------------------

  private mark(): number {
    return this.vars.length;
  }

  private pop(mark: number): void {
    this.vars.length = mark;
  }

  private push(name: string, value: unknown): void {
    this.vars.push({ name, value });
  }

  private setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }

  private setTopVar(n: number, value: unknown): void {
    this.vars[this.vars.length - n]!.value = value;
  }

  private varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) return this.vars[i]!.value;
    }
    this.errorf(`undefined variable: ${name}`);
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

  // --- evaluation ---------------------------------------------------------

  private evalPipeline(dot: unknown, pipe: PipeNode | null): unknown {
    if (pipe === null) return undefined;
    this.at(pipe);
    let value: Final = MISSING;
    for (const cmd of pipe.cmds) value = this.evalCommand(dot, cmd, value);
    for (const v of pipe.decl) {
      if (pipe.isAssign) this.setVar(v.ident[0]!, value);
      else this.push(v.ident[0]!, value);
    }
    return value;
  }

  private notAFunction(args: readonly Node[], final: Final): void {
    if (args.length > 1 || final !== MISSING)
      this.errorf(`can't give argument to non-function ${nodeString(args[0]!)}`);
  }

  private evalCommand(dot: unknown, cmd: CommandNode, final: Final): unknown {
    const first = cmd.args[0]!;
    switch (first.kind) {
      case 'field':
        return this.evalFieldNode(dot, first, cmd.args, final);
      case 'chain':
        return this.evalChainNode(dot, first, cmd.args, final);
      case 'identifier':
        return this.evalFunction(dot, first, cmd, cmd.args, final);
      case 'pipe':
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first);
      case 'variable':
        return this.evalVariableNode(dot, first, cmd.args, final);
      default:
        break;
    }
    this.at(first);
    this.notAFunction(cmd.args, final);
    switch (first.kind) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        this.errorf('nil is not a command');
        break;
      case 'number':
        return this.idealConstant(first);
      case 'string':
        return first.text;
      default:
        break;
    }
    this.errorf(`can't evaluate command ${JSON.stringify(nodeString(first))}`);
  }

  private idealConstant(n: NumberNode): unknown {
    this.at(n);
    if (n.isFloat && !/^[+-]?0[xX]/.test(n.text) && !n.text.startsWith("'") && /[.eEpP]/.test(n.text)) {
      return goFloat(n.float);
    }
    if (n.isInt) {
      if (n.int > 0x7fffffffffffffffn || n.int < -0x8000000000000000n) this.errorf(`${n.text} overflows int`);
      const v = Number(n.int);
      if (!Number.isSafeInteger(v)) return n.int;
      return v;
    }
    this.errorf(`${n.text} overflows int`);
  }

  private evalFieldNode(dot: unknown, field: FieldNode, args: readonly Node[], final: Final): unknown {
    this.at(field);
    return this.evalFieldChain(dot, dot, field, field.ident, args, final);
  }

  private evalChainNode(dot: unknown, chain: ChainNode, args: readonly Node[], final: Final): unknown {
    this.at(chain);
    if (chain.node.kind === 'nil') this.errorf(`indirection through explicit nil in ${nodeString(chain)}`);
    const pipe = this.evalArg(dot, null, chain.node);
    return this.evalFieldChain(dot, pipe, chain, chain.field, args, final);
  }

  private evalVariableNode(dot: unknown, v: VariableNode, args: readonly Node[], final: Final): unknown {
    this.at(v);
    const value = this.varValue(v.ident[0]!);
    if (v.ident.length === 1) {
      this.notAFunction(args, final);
      return value;
    }
    return this.evalFieldChain(dot, value, v, v.ident.slice(1), args, final);
  }

  private evalFieldChain(
    dot: unknown,
    receiver: unknown,
    node: Node,
    ident: readonly string[],
    args: readonly Node[],
    final: Final,
  ): unknown {
    const n = ident.length;
    for (let i = 0; i < n - 1; i++) receiver = this.evalField(dot, ident[i]!, node, [], MISSING, receiver);
    return this.evalField(dot, ident[n - 1]!, node, args, final, receiver);
  }

  private evalField(
    dot: unknown,
    fieldName: string,
    node: Node,
    args: readonly Node[],
    final: Final,
    receiver: unknown,
  ): unknown {
    if (receiver === undefined || receiver === null) return undefined;
    if (receiver instanceof GoStruct) {
      const method = structMethod(receiver, fieldName);
      if (method) return this.evalCall(dot, method, false, node, fieldName, args, final);
    }
    const hasArgs = args.length > 1 || final !== MISSING;
    if (receiver instanceof GoStruct) {
      const f = structField(receiver, fieldName);
      if (f.found) {
        if (!isExported(fieldName)) {
          this.errorf(`${fieldName} is an unexported field of struct type ${typeName(receiver)}`);
        }
        if (hasArgs) this.errorf(`${fieldName} has arguments but cannot be invoked as function`);
        return f.value;
      }
    } else {
      const m = asGoMap(receiver);
      if (m && m.stringKeys) {
        if (hasArgs) this.errorf(`${fieldName} is not a method but has arguments`);
        return m.entries.get(fieldName);
      }
    }
    this.errorf(`can't evaluate field ${fieldName} in type ${typeName(receiver)}`);
  }

  /** `cmd` is where a failed call is reported: the whole command, as Go reports it. */
  private evalFunction(
    dot: unknown,
    node: IdentifierNode,
    cmd: Node,
    args: readonly Node[],
    final: Final,
  ): unknown {
    this.at(node);
    const name = node.ident;
    const fn = this.funcs.get(name);
    if (!fn) this.errorf(`${JSON.stringify(name)} is not a defined function`);
    return this.evalCall(dot, fn, true, cmd, name, args, final);
  }

  private evalCall(
    dot: unknown,
    fn: GoFunc | GoMethod,
    isBuiltin: boolean,
    node: Node,
    name: string,
    allArgs: readonly Node[],
    final: Final,
  ): unknown {
    const args = allArgs.slice(1);
    const numIn = args.length + (final !== MISSING ? 1 : 0);
    const fixed = fn.params.length;
    if (fn.variadic !== undefined) {
      if (numIn < fixed)
        this.errorf(`wrong number of args for ${name}: want at least ${fixed} got ${args.length}`);
    } else if (numIn !== fixed) {
      this.errorf(`wrong number of args for ${name}: want ${fixed} got ${numIn}`);
    }
    if (isBuiltin && (name === 'and' || name === 'or')) {
      let v: unknown = undefined;
      for (const arg of args) {
        v = this.evalArg(dot, 'value', arg);
        if ((isTrue(v) ?? true) === (name === 'or')) return v;
      }
      if (final !== MISSING) v = this.validateType(final, 'value');
      return v;
    }
    const typeOf = (i: number): ParamKind => (i < fixed ? fn.params[i]! : fn.variadic!);
    const argv: unknown[] = [];
    let i = 0;
    for (; i < args.length && i < Math.max(fixed, fn.variadic !== undefined ? args.length : fixed); i++) {
      argv.push(this.evalArg(dot, typeOf(i), args[i]!));
    }
    if (final !== MISSING) argv.push(this.validateType(final, typeOf(argv.length)));
    let result: unknown;
    try {
      result = fn.call(argv);
    } catch (e) {
      if (e instanceof TemplateError) throw e;
      this.at(node);
      const msg = e instanceof Error ? e.message : String(e);
      this.errorf(`error calling ${name}: ${msg}`);
    }
    return this.bounded(name, result, node);
  }

  private evalArg(dot: unknown, typ: ParamKind | null, n: Node): unknown {
    this.at(n);
    switch (n.kind) {
      case 'dot':
        return this.validateType(dot, typ);
      case 'nil':
        if (typ === null || canBeNil(typ)) return undefined;
        this.errorf(`cannot assign nil to ${paramTypeName(typ)}`);
        break;
      case 'field':
        return this.validateType(this.evalFieldNode(dot, n, [n], MISSING), typ);
      case 'variable':
        return this.validateType(this.evalVariableNode(dot, n, [], MISSING), typ);
      case 'pipe':
        return this.validateType(this.evalPipeline(dot, n), typ);
      case 'identifier':
        return this.validateType(this.evalFunction(dot, n, n, [n], MISSING), typ);
      case 'chain':
        return this.validateType(this.evalChainNode(dot, n, [], MISSING), typ);
      default:
        break;
    }
    switch (typ) {
      case 'bool':
        if (n.kind === 'bool') return n.value;
        this.errorf(`expected bool; found ${nodeString(n)}`);
        break;
      case 'float64':
        if (n.kind === 'number' && n.isFloat) return goFloat(n.float);
        this.errorf(`expected float; found ${nodeString(n)}`);
        break;
      case 'int':
      case 'int64':
        if (n.kind === 'number' && n.isInt) return typ === 'int64' ? n.int : Number(n.int);
        this.errorf(`expected integer; found ${nodeString(n)}`);
        break;
      case 'string':
        if (n.kind === 'string') return n.text;
        this.errorf(`expected string; found ${nodeString(n)}`);
        break;
      case 'any':
      case 'value':
      case null:
        return this.evalEmptyInterface(dot, n);
      default:
        break;
    }
    this.errorf(`can't handle ${nodeString(n)} for arg of type ${paramTypeName(typ)}`);
  }

  private evalEmptyInterface(dot: unknown, n: Node): unknown {
    this.at(n);
    switch (n.kind) {
      case 'bool':
        return n.value;
      case 'number':
        return this.idealConstant(n);
      case 'string':
        return n.text;
      case 'nil':
        this.errorf("evalEmptyInterface: nil (can't happen)");
        break;
      default:
        return this.evalArg(dot, 'any', n);
    }
  }

  private validateType(value: unknown, typ: ParamKind | null): unknown {
    if (value === MISSING) value = undefined;
    if (value === undefined || value === null) {
      if (typ === null || canBeNil(typ)) return zeroOf(typ);
      this.errorf(`invalid value; expected ${paramTypeName(typ)}`);
    }
    if (typ === null || typ === 'any' || typ === 'value') return value;
    const k = kindOf(value);
    const ok =
      (typ === 'string' && k === 'string') ||
      (typ === 'bool' && k === 'bool') ||
      (typ === 'int' && k === 'int') ||
      (typ === 'int64' && k === 'int64') ||
      (typ === 'float64' && (k === 'float64' || k === 'int')) ||
      (typ === 'dict' && k === 'map' && typeName(value) === 'map[string]interface {}') ||
      (typ === 'strings' && k === 'slice' && typeName(value) === '[]string');
    if (!ok) this.errorf(`wrong type for value; expected ${paramTypeName(typ)}; got ${typeName(value)}`);
    return value;
  }
}

const exportedNames = new Map<string, boolean>();

/** Go's IsExported: the name starts with an upper-case letter. */
function isExported(name: string): boolean {
  let r = exportedNames.get(name);
  if (r === undefined) {
    r = /^\p{Lu}/u.test(name);
    exportedNames.set(name, r);
  }
  return r;
}

function canBeNil(typ: ParamKind): boolean {
  return typ === 'any' || typ === 'value' || typ === 'dict' || typ === 'strings';
}

function zeroOf(typ: ParamKind | null): unknown {
  if (typ === 'dict') return new GoMap('map[string]interface {}', new Map());
  if (typ === 'strings') return [];
  return undefined;
}
