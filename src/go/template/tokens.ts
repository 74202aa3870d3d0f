/**
 * The parser's view of the lexed items (text/template/parse/parse.go's next, backup, peek and
 * the error functions): a cursor over the items, and errors worded as Go words them, at the line
 * of the furthest item read.
 */
import { TemplateError } from './errors.js';
import { itemString, type Item, type ItemType } from './lex.js';

export class TokenStream {
  protected i = 0;
  private furthest = 0;
  /** Line of the `{{` of the action being parsed, 0 outside one. */
  protected actionLine = 0;

  constructor(
    protected readonly name: string,
    private readonly items: Item[],
  ) {}

  protected at(index: number): Item {
    const last = this.items[this.items.length - 1]!;
    return this.items[index] ?? last;
  }

  protected next(): Item {
    const it = this.at(this.i);
    this.i++;
    if (this.i - 1 > this.furthest) this.furthest = Math.min(this.i - 1, this.items.length - 1);
    return it;
  }

  protected backup(n = 1): void {
    this.i -= n;
  }

  protected peek(): Item {
    const it = this.at(this.i);
    if (this.i > this.furthest) this.furthest = Math.min(this.i, this.items.length - 1);
    return it;
  }

  protected nextNonSpace(): Item {
    for (;;) {
      const t = this.next();
      if (t.type !== 'space') return t;
    }
  }

  /** Like Go's: the spaces before the token are consumed, the token is not. */
  protected peekNonSpace(): Item {
    const t = this.nextNonSpace();
    this.backup();
    return t;
  }

  // --- errors -------------------------------------------------------------

  protected errorf(msg: string): never {
    const line = this.at(this.furthest).line;
    throw new TemplateError(`template: ${this.name}:${line}: ${msg}`, line);
  }

  protected unexpected(token: Item, context: string): never {
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

  protected expect(expected: ItemType, context: string): Item {
    const t = this.nextNonSpace();
    if (t.type !== expected) this.unexpected(t, context);
    return t;
  }
}
