/**
 * The parser of Go's text/template (text/template/parse/parse.go, Go 1.22):
 * same grammar, same checks (functions and variables must be defined at parse
 * time), same error words.
 */
import { TemplateError } from './errors.js';
import { itemString, lex, type Item, type ItemType } from './lex.js';
import {
  nodeString,
  type BranchNode,
  type CommandNode,
  type ListNode,
  type Node,
  type NumberNode,
  type PipeNode,
  type VariableNode,
} from './nodes.js';

/** Whether a function name may be used: Go checks this while parsing. */
export type FunctionCheck = (name: string) => 'defined' | 'undefined' | { unsupported: string };

export interface ParsedTemplates {
  /** The templates of the text: the top-level one under `name`, plus each {{define}} / {{block}}. */
  trees: Map<string, ListNode>;
}

export function parse(name: string, text: string, checkFunction: FunctionCheck): ParsedTemplates {
  const trees = new Map<string, ListNode>();
  const p = new Parser(name, text, lex(text), checkFunction, trees);
  p.parseTop();
  return { trees };
}

class Parser {
  private i = 0;
  private furthest = 0;
  private vars: string[] = ['$'];
  private actionLine = 0;
  private rangeDepth = 0;
  private stackDepth = 0;

  constructor(
    private readonly name: string,
    private readonly text: string,
    private readonly items: Item[],
    private readonly checkFunction: FunctionCheck,
    private readonly trees: Map<string, ListNode>,
  ) {}

  // --- token stream -------------------------------------------------------

  private at(index: number): Item {
    const last = this.items[this.items.length - 1]!;
    return this.items[index] ?? last;
  }

  private next(): Item {
    const it = this.at(this.i);
    this.i++;
    if (this.i - 1 > this.furthest) this.furthest = Math.min(this.i - 1, this.items.length - 1);
    return it;
  }

  private backup(n = 1): void {
    this.i -= n;
  }

  private peek(): Item {
    const it = this.at(this.i);
    if (this.i > this.furthest) this.furthest = Math.min(this.i, this.items.length - 1);
    return it;
  }

  private nextNonSpace(): Item {
    for (;;) {
      const t = this.next();
      if (t.type !== 'space') return t;
    }
  }

  /** Like Go's: the spaces before the token are consumed, the token is not. */
  private peekNonSpace(): Item {
    const t = this.nextNonSpace();
    this.backup();
    return t;
  }

  // --- errors -------------------------------------------------------------

  private errorf(msg: string): never {
    const line = this.at(this.furthest).line;
    throw new TemplateError(`template: ${this.name}:${line}: ${msg}`, line);
  }

  private unexpected(token: Item, context: string): never {
    if (token.type === 'error') {
      let extra = '';
      if (this.actionLine !== 0 && this.actionLine !== token.line) {
        extra = ` in action started at ${this.name}:${this.actionLine}`;
        if (token.val.endsWith(' action')) extra = extra.slice(' in action'.length);
      }
      this.errorf(`${itemString(token)}${extra}`);
    }
    this.errorf(`unexpected ${itemString(token)} in ${context}`);
  }

  private expect(expected: ItemType, context: string): Item {
    const t = this.nextNonSpace();
    if (t.type !== expected) this.unexpected(t, context);
    return t;
  }

  // --- grammar ------------------------------------------------------------

  parseTop(): void {
    const root: ListNode = { kind: 'list', pos: this.peek().pos, nodes: [] };
    while (this.peek().type !== 'eof') {
      if (this.peek().type === 'leftDelim') {
        const save = this.i;
        this.next();
        if (this.nextNonSpace().type === 'define') {
          this.parseDefinition();
          continue;
        }
        this.i = save;
      }
      const n = this.textOrAction();
      if (n.kind === 'end' || n.kind === 'else') this.errorf(`unexpected ${nodeString(n)}`);
      root.nodes.push(n);
    }
    this.add(this.name, root);
  }

  private add(name: string, root: ListNode): void {
    const existing = this.trees.get(name);
    if (existing === undefined || isEmptyTree(existing)) {
      this.trees.set(name, root);
      return;
    }
    if (!isEmptyTree(root)) this.errorf(`template: multiple definition of template ${JSON.stringify(name)}`);
  }

  private parseDefinition(): void {
    const context = 'define clause';
    const nameTok = this.nextNonSpace();
    if (nameTok.type !== 'string' && nameTok.type !== 'rawString') this.unexpected(nameTok, context);
    const defName = this.unquote(nameTok.val);
    this.expect('rightDelim', context);
    const savedVars = this.vars;
    this.vars = ['$'];
    const [list, end] = this.itemList();
    this.vars = savedVars;
    if (end.kind !== 'end') this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    this.add(defName, list);
  }

  private itemList(): [ListNode, Node] {
    const list: ListNode = { kind: 'list', pos: this.peekNonSpace().pos, nodes: [] };
    while (this.peekNonSpace().type !== 'eof') {
      const n = this.textOrAction();
      if (n.kind === 'end' || n.kind === 'else') return [list, n];
      list.nodes.push(n);
    }
    this.errorf('unexpected EOF');
  }

  private textOrAction(): Node {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'text':
        return { kind: 'text', pos: token.pos, text: token.val };
      case 'leftDelim': {
        this.actionLine = token.line;
        try {
          return this.action();
        } finally {
          this.actionLine = 0;
        }
      }
      default:
        this.unexpected(token, 'input');
    }
  }

  private action(): Node {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'block':
        return this.blockControl();
      case 'break':
        return this.breakControl(token, 'break');
      case 'continue':
        return this.breakControl(token, 'continue');
      case 'else':
        return this.elseControl();
      case 'end':
        return { kind: 'end', pos: this.expect('rightDelim', 'end').pos };
      case 'if':
        return { kind: 'if', ...this.parseControl('if') };
      case 'range':
        return { kind: 'range', ...this.parseControl('range') };
      case 'template':
        return this.templateControl();
      case 'with':
        return { kind: 'with', ...this.parseControl('with') };
      default:
        break;
    }
    this.backup();
    const t = this.peek();
    return { kind: 'action', pos: t.pos, line: t.line, pipe: this.pipeline('command', 'rightDelim') };
  }

  private breakControl(token: Item, word: 'break' | 'continue'): Node {
    const t = this.nextNonSpace();
    if (t.type !== 'rightDelim') this.unexpected(t, `{{${word}}}`);
    if (this.rangeDepth === 0) this.errorf(`{{${word}}} outside {{range}}`);
    return { kind: word, pos: token.pos, line: token.line };
  }

  private elseControl(): Node {
    const peek = this.peekNonSpace();
    if (peek.type === 'if' || peek.type === 'with') return { kind: 'else', pos: peek.pos, line: peek.line };
    const token = this.expect('rightDelim', 'else');
    return { kind: 'else', pos: token.pos, line: token.line };
  }

  private parseControl(context: 'if' | 'range' | 'with'): BranchNode {
    const mark = this.vars.length;
    try {
      const pipe = this.pipeline(context, 'rightDelim');
      if (context === 'range') this.rangeDepth++;
      const [list, firstEnd] = this.itemList();
      let next = firstEnd;
      if (context === 'range') this.rangeDepth--;
      let elseList: ListNode | null = null;
      if (next.kind === 'else') {
        // {{else if …}} and {{else with …}} are {{else}}{{if …}}…{{end}}{{end}} with the last {{end}} implied.
        if (context === 'if' && this.peek().type === 'if') {
          this.next();
          elseList = { kind: 'list', pos: next.pos, nodes: [{ kind: 'if', ...this.parseControl('if') }] };
        } else if (context === 'with' && this.peek().type === 'with') {
          this.next();
          elseList = { kind: 'list', pos: next.pos, nodes: [{ kind: 'with', ...this.parseControl('with') }] };
        } else {
          [elseList, next] = this.itemList();
          if (next.kind !== 'end') this.errorf(`expected end; found ${nodeString(next)}`);
        }
      }
      return { pos: pipe.pos, line: pipe.line, pipe, list, elseList };
    } finally {
      this.vars.length = mark;
    }
  }

  private blockControl(): Node {
    const context = 'block clause';
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    const pipe = this.pipeline(context, 'rightDelim');
    const savedVars = this.vars;
    this.vars = ['$'];
    const [list, end] = this.itemList();
    this.vars = savedVars;
    if (end.kind !== 'end') this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    this.add(name, list);
    return { kind: 'template', pos: token.pos, line: token.line, name, pipe };
  }

  private templateControl(): Node {
    const context = 'template clause';
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    let pipe: PipeNode | null = null;
    if (this.nextNonSpace().type !== 'rightDelim') {
      this.backup();
      pipe = this.pipeline(context, 'rightDelim');
    }
    return { kind: 'template', pos: token.pos, line: token.line, name, pipe };
  }

  private templateName(token: Item, context: string): string {
    if (token.type === 'string' || token.type === 'rawString') return this.unquote(token.val);
    this.unexpected(token, context);
  }

  private pipeline(context: string, end: ItemType): PipeNode {
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
        return this.newNumber(token);
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

  private unquote(quoted: string): string {
    const s = goUnquote(quoted);
    if (s === null) this.errorf('invalid syntax');
    return s;
  }

  private newNumber(token: Item): NumberNode {
    const text = token.val;
    const n: NumberNode = {
      kind: 'number',
      pos: token.pos,
      isInt: false,
      isFloat: false,
      int: 0n,
      float: 0,
      text,
    };
    if (token.type === 'charConstant') {
      const s = goUnquote(text);
      if (s === null || [...s].length !== 1) this.errorf(`malformed character constant: ${text}`);
      const cp = s.codePointAt(0)!;
      n.isInt = true;
      n.isFloat = true;
      n.int = BigInt(cp);
      n.float = cp;
      return n;
    }
    if (token.type === 'complex' || text.endsWith('i')) {
      this.errorf(`pawl does not support complex constants: ${text}`);
    }
    const i = parseGoInt(text);
    if (i !== null) {
      if (i > 0x7fffffffffffffffn || i < -0x8000000000000000n) {
        if (!/[.eEpP]/.test(text)) this.errorf(`integer overflow: ${text}`);
      } else {
        n.isInt = true;
        n.int = i;
        n.isFloat = true;
        n.float = Number(i);
        return n;
      }
    }
    const f = parseGoFloat(text);
    if (f !== null) {
      if (!/[.eEpP]/.test(text) && !/^[+-]?0[xX]/.test(text)) this.errorf(`integer overflow: ${text}`);
      n.isFloat = true;
      n.float = f;
      if (Number.isInteger(f) && Math.abs(f) < 2 ** 63) {
        n.isInt = true;
        n.int = BigInt(f);
      }
      return n;
    }
    this.errorf(`illegal number syntax: ${JSON.stringify(text)}`);
  }
}

function isEmptyTree(n: ListNode): boolean {
  return n.nodes.every((c) => c.kind === 'text' && c.text.trim() === '');
}

/** strconv.ParseInt(text, 0, 64) without the range check; null when not an integer. */
function parseGoInt(text: string): bigint | null {
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)$/.exec(text);
  if (!m) return null;
  const sign = m[1] === '-' ? -1n : 1n;
  let body = m[2]!;
  if (body.includes('_')) {
    // Underscores only between digits, and only with a base prefix (or a leading 0).
    if (!/^0/.test(body) || /__|_$/.test(body)) return null;
    body = body.replace(/_/g, '');
  }
  let v: bigint;
  if (/^0[xXoObB]/.test(body)) {
    if (body.length === 2) return null;
    v = BigInt(body.toLowerCase());
  } else if (body.length > 1 && body.startsWith('0')) {
    v = BigInt(`0o${body.slice(1)}`);
  } else {
    v = BigInt(body);
  }
  return sign * v;
}

function parseGoFloat(text: string): number | null {
  const t = text.replace(/_/g, '');
  if (/^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)$/.test(t)) return Number(t);
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+-]?\d+)$/.exec(t);
  if (hex) {
    const [, sign, intPart, frac, exp] = hex;
    const mant = parseInt(`${intPart || '0'}${frac}`, 16) / 16 ** frac!.length;
    const v = mant * 2 ** Number(exp);
    return sign === '-' ? -v : v;
  }
  return null;
}

/** strconv.Unquote for "…", `…` and '…'; null when the syntax is invalid. */
export function goUnquote(q: string): string | null {
  if (q.length < 2) return null;
  const quote = q[0];
  if (quote !== q[q.length - 1]) return null;
  const body = q.slice(1, -1);
  if (quote === '`') return body.includes('`') ? null : body.replace(/\r/g, '');
  if (quote !== '"' && quote !== "'") return null;
  let out = '';
  for (let i = 0; i < body.length;) {
    const c = body[i]!;
    if (c === quote) return null;
    if (c === '\n') return null;
    if (c !== '\\') {
      const cp = body.codePointAt(i)!;
      out += String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = body[i + 1];
    i += 2;
    switch (e) {
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
      case "'":
        if (e !== quote) return null;
        out += e;
        break;
      case 'x':
      case 'u':
      case 'U': {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = body.slice(i, i + n);
        if (hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex)) return null;
        i += n;
        const v = parseInt(hex, 16);
        if (e === 'x') {
          // A \x byte: only meaningful as UTF-8 together with its neighbours; keep ASCII, else latin-1.
          out += String.fromCharCode(v);
        } else {
          if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return null;
          out += String.fromCodePoint(v);
        }
        break;
      }
      default: {
        if (e !== undefined && e >= '0' && e <= '7') {
          const oct = body.slice(i - 1, i + 2);
          if (!/^[0-7]{3}$/.test(oct)) return null;
          const v = parseInt(oct, 8);
          if (v > 255) return null;
          out += String.fromCharCode(v);
          i += 2;
          break;
        }
        return null;
      }
    }
  }
  return out;
}
