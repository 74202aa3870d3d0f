/**
 * The evaluation of pipelines (text/template/exec.go's eval functions): commands, fields,
 * function and method calls, arguments checked against the parameter types as Go checks them.
 */
import { TemplateError } from './errors.js';
import type {
  ChainNode,
  CommandNode,
  FieldNode,
  IdentifierNode,
  Node,
  NumberNode,
  PipeNode,
  VariableNode,
} from './nodes.js';
import { nodeString } from './nodes.js';
import { ExecState } from './state.js';
import {
  asGoMap,
  goFloat,
  GoMap,
  GoStruct,
  isTrue,
  kindOf,
  paramTypeName,
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

export class Evaluator extends ExecState {
  constructor(
    name: string,
    text: string,
    private readonly funcs: FuncMap,
  ) {
    super(name, text);
  }

  protected evalPipeline(dot: unknown, pipe: PipeNode | null): unknown {
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
