/**
 * Pipelines and their commands, operands and terms (text/template/parse/parse.go from pipeline
 * down to term), with Go's parse-time checks: each function and variable must be defined.
 */
import type { Item, ItemType } from './lex.js';
import { goUnquote, newNumber } from './literals.js';
import { nodeString, type CommandNode, type Node, type PipeNode, type VariableNode } from './nodes.js';
import { TokenStream } from './tokens.js';

/** Whether a function name may be used: Go checks this while parsing. */
export type FunctionCheck = (name: string) => 'defined' | 'undefined' | { unsupported: string };

export class PipelineParser extends TokenStream {
  /** The variables in scope, innermost last. */
  protected vars: string[] = ['$'];
  private stackDepth = 0;

  constructor(
    name: string,
    items: Item[],
    private readonly checkFunction: FunctionCheck,
  ) {
    super(name, items);
  }

  protected pipeline(context: string, end: ItemType): PipeNode {
    const token = this.peekNonSpace();
    const pipe: PipeNode = {
      kind: 'pipe',
      pos: token.pos,
      line: token.line,
      isAssign: false,
      decl: [],
      cmds: [],
    };
    decls: for (;;) {
      const v = this.peekNonSpace();
      if (v.type !== 'variable') break;
      const save = this.i;
      this.nextNonSpace();
      const next = this.peekNonSpace();
      if (next.type === 'assign' || next.type === 'declare') {
        pipe.isAssign = next.type === 'assign';
        this.nextNonSpace();
        pipe.decl.push(this.newVariable(v));
        this.vars.push(v.val);
      } else if (next.type === 'char' && next.val === ',') {
        this.nextNonSpace();
        pipe.decl.push(this.newVariable(v));
        this.vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          const t = this.peekNonSpace().type;
          if (t === 'variable' || t === 'rightDelim' || t === 'rightParen') continue decls;
          this.errorf('range can only initialize variables');
        }
        this.errorf(`too many declarations in ${context}`);
      } else {
        this.i = save;
      }
      break;
    }
    for (;;) {
      const t = this.nextNonSpace();
      if (t.type === end) {
        this.checkPipeline(pipe, context);
        return pipe;
      }
      switch (t.type) {
        case 'bool':
        case 'charConstant':
        case 'complex':
        case 'dot':
        case 'field':
        case 'identifier':
        case 'number':
        case 'nil':
        case 'rawString':
        case 'string':
        case 'variable':
        case 'leftParen':
          this.backup();
          pipe.cmds.push(this.command());
          break;
        default:
          this.unexpected(t, context);
      }
    }
  }

  private checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) this.errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      const k = c.args[0]!.kind;
      if (k === 'bool' || k === 'dot' || k === 'nil' || k === 'number' || k === 'string') {
        this.errorf(`non executable command in pipeline stage ${i + 2}`);
      }
    });
  }

  private command(): CommandNode {
    const cmd: CommandNode = { kind: 'command', pos: this.peekNonSpace().pos, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand) cmd.args.push(operand);
      const token = this.next();
      if (token.type === 'space') continue;
      if (token.type === 'rightDelim' || token.type === 'rightParen') this.backup();
      else if (token.type !== 'pipe') this.unexpected(token, 'operand');
      break;
    }
    if (cmd.args.length === 0) this.errorf('empty command');
    return cmd;
  }

  private operand(): Node | null {
    let node = this.term();
    if (!node) return null;
    if (this.peek().type === 'field') {
      const fields: string[] = [];
      const pos = this.peek().pos;
      while (this.peek().type === 'field') fields.push(this.next().val.slice(1));
      switch (node.kind) {
        case 'field':
          node = { kind: 'field', pos, ident: [...node.ident, ...fields] };
          break;
        case 'variable':
          node = { kind: 'variable', pos, ident: [...node.ident, ...fields] };
          break;
        case 'bool':
        case 'string':
        case 'number':
        case 'nil':
        case 'dot':
          this.errorf(`unexpected . after term ${JSON.stringify(nodeString(node))}`);
          break;
        default:
          node = { kind: 'chain', pos, node, field: fields };
      }
    }
    return node;
  }

  private term(): Node | null {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'identifier': {
        const check = this.checkFunction(token.val);
        if (check === 'undefined') this.errorf(`function ${JSON.stringify(token.val)} not defined`);
        if (typeof check === 'object') this.errorf(check.unsupported);
        return { kind: 'identifier', pos: token.pos, ident: token.val };
      }
      case 'dot':
        return { kind: 'dot', pos: token.pos };
      case 'nil':
        return { kind: 'nil', pos: token.pos };
      case 'variable':
        return this.useVar(token);
      case 'field':
        return { kind: 'field', pos: token.pos, ident: token.val.slice(1).split('.') };
      case 'bool':
        return { kind: 'bool', pos: token.pos, value: token.val === 'true' };
      case 'charConstant':
      case 'complex':
      case 'number':
        return newNumber(token, (msg) => this.errorf(msg));
      case 'leftParen': {
        if (this.stackDepth >= 10000) this.errorf('max expression depth exceeded');
        this.stackDepth++;
        try {
          return this.pipeline('parenthesized pipeline', 'rightParen');
        } finally {
          this.stackDepth--;
        }
      }
      case 'string':
      case 'rawString':
        return { kind: 'string', pos: token.pos, quoted: token.val, text: this.unquote(token.val) };
      default:
        this.backup();
        return null;
    }
  }

  private newVariable(token: Item): VariableNode {
    return { kind: 'variable', pos: token.pos, ident: token.val.split('.') };
  }

  private useVar(token: Item): VariableNode {
    const v = this.newVariable(token);
    if (!this.vars.includes(v.ident[0]!)) this.errorf(`undefined variable ${JSON.stringify(v.ident[0])}`);
    return v;
  }

  protected unquote(quoted: string): string {
    const s = goUnquote(quoted);
    if (s === null) this.errorf('invalid syntax');
    return s;
  }
}
