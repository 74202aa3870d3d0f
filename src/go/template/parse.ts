/**
 * The parser of Go's text/template (text/template/parse/parse.go, Go 1.22):
 * same grammar, same checks (functions and variables must be defined at parse
 * time), same error words. This file is the template's structure (text, actions,
 * control structures, definitions); pipeline.ts parses what is inside an action.
 */
import { lex } from './lex.js';
import type { Item } from './lex.js';
import { nodeString, type BranchNode, type ListNode, type Node, type PipeNode } from './nodes.js';
import { PipelineParser, type FunctionCheck } from './pipeline.js';

export type { FunctionCheck } from './pipeline.js';

export interface ParsedTemplates {
  /** The templates of the text: the top-level one under `name`, plus each {{define}} / {{block}}. */
  trees: Map<string, ListNode>;
}

export function parse(name: string, text: string, checkFunction: FunctionCheck): ParsedTemplates {
  const trees = new Map<string, ListNode>();
  const p = new Parser(name, lex(text), checkFunction, trees);
  p.parseTop();
  return { trees };
}

class Parser extends PipelineParser {
  private rangeDepth = 0;

  constructor(
    name: string,
    items: Item[],
    checkFunction: FunctionCheck,
    private readonly trees: Map<string, ListNode>,
  ) {
    super(name, items, checkFunction);
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
    const name = this.templateName(this.nextNonSpace(), context);
    this.expect('rightDelim', context);
    this.definitionBody(name, context);
  }

  /** The body of a {{define}} or {{block}} up to its {{end}}: a template of its own, with only `$` in scope. */
  private definitionBody(name: string, context: string): void {
    const savedVars = this.vars;
    this.vars = ['$'];
    const [list, end] = this.itemList();
    this.vars = savedVars;
    if (end.kind !== 'end') this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    this.add(name, list);
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
    this.definitionBody(name, context);
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
}

function isEmptyTree(n: ListNode): boolean {
  return n.nodes.every((c) => c.kind === 'text' && c.text.trim() === '');
}
