/** The parse tree of Go's text/template (text/template/parse/node.go), as plain data. */

export type Node =
  | ListNode
  | TextNode
  | ActionNode
  | PipeNode
  | CommandNode
  | IdentifierNode
  | VariableNode
  | DotNode
  | NilNode
  | FieldNode
  | ChainNode
  | BoolNode
  | NumberNode
  | StringNode
  | IfNode
  | RangeNode
  | WithNode
  | TemplateNode
  | BreakNode
  | ContinueNode
  | EndNode
  | ElseNode;

interface Base {
  pos: number;
}
export interface ListNode extends Base {
  kind: 'list';
  nodes: Node[];
}
export interface TextNode extends Base {
  kind: 'text';
  text: string;
}
export interface ActionNode extends Base {
  kind: 'action';
  line: number;
  pipe: PipeNode;
}
export interface PipeNode extends Base {
  kind: 'pipe';
  line: number;
  isAssign: boolean;
  decl: VariableNode[];
  cmds: CommandNode[];
}
export interface CommandNode extends Base {
  kind: 'command';
  args: Node[];
}
export interface IdentifierNode extends Base {
  kind: 'identifier';
  ident: string;
}
export interface VariableNode extends Base {
  kind: 'variable';
  ident: string[];
}
export interface DotNode extends Base {
  kind: 'dot';
}
export interface NilNode extends Base {
  kind: 'nil';
}
export interface FieldNode extends Base {
  kind: 'field';
  ident: string[];
}
export interface ChainNode extends Base {
  kind: 'chain';
  node: Node;
  field: string[];
}
export interface BoolNode extends Base {
  kind: 'bool';
  value: boolean;
}
export interface NumberNode extends Base {
  kind: 'number';
  isInt: boolean;
  isFloat: boolean;
  /** Set when isInt. */
  int: bigint;
  /** Set when isFloat. */
  float: number;
  text: string;
}
export interface StringNode extends Base {
  kind: 'string';
  quoted: string;
  text: string;
}
export interface BranchNode extends Base {
  line: number;
  pipe: PipeNode;
  list: ListNode;
  elseList: ListNode | null;
}
export interface IfNode extends BranchNode {
  kind: 'if';
}
export interface RangeNode extends BranchNode {
  kind: 'range';
}
export interface WithNode extends BranchNode {
  kind: 'with';
}
export interface TemplateNode extends Base {
  kind: 'template';
  line: number;
  name: string;
  pipe: PipeNode | null;
}
export interface BreakNode extends Base {
  kind: 'break';
  line: number;
}
export interface ContinueNode extends Base {
  kind: 'continue';
  line: number;
}
export interface EndNode extends Base {
  kind: 'end';
}
export interface ElseNode extends Base {
  kind: 'else';
  line: number;
}

/** Go's Node.String(): the source form of a node, used in error messages. */
export function nodeString(n: Node): string {
  switch (n.kind) {
    case 'list':
      return n.nodes.map(nodeString).join('');
    case 'text':
      return JSON.stringify(n.text);
    case 'action':
      return `{{${nodeString(n.pipe)}}}`;
    case 'pipe': {
      let s = '';
      if (n.decl.length > 0) {
        s = n.decl.map(nodeString).join(', ') + (n.isAssign ? ' = ' : ' := ');
      }
      return s + n.cmds.map(nodeString).join(' | ');
    }
    case 'command':
      return n.args.map((a) => (a.kind === 'pipe' ? `(${nodeString(a)})` : nodeString(a))).join(' ');
    case 'identifier':
      return n.ident;
    case 'variable':
      return n.ident.join('.');
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'field':
      return n.ident.map((f) => `.${f}`).join('');
    case 'chain': {
      const inner = n.node.kind === 'pipe' ? `(${nodeString(n.node)})` : nodeString(n.node);
      return inner + n.field.map((f) => `.${f}`).join('');
    }
    case 'bool':
      return n.value ? 'true' : 'false';
    case 'number':
      return n.text;
    case 'string':
      return n.quoted;
    case 'if':
    case 'range':
    case 'with': {
      let s = `{{${n.kind} ${nodeString(n.pipe)}}}${nodeString(n.list)}`;
      if (n.elseList) s += `{{else}}${nodeString(n.elseList)}`;
      return `${s}{{end}}`;
    }
    case 'template':
      return n.pipe
        ? `{{template ${JSON.stringify(n.name)} ${nodeString(n.pipe)}}}`
        : `{{template ${JSON.stringify(n.name)}}}`;
    case 'break':
      return '{{break}}';
    case 'continue':
      return '{{continue}}';
    case 'end':
      return '{{end}}';
    case 'else':
      return '{{else}}';
  }
}
