/**
 * The state of one rendering (text/template/exec.go's state): the node being evaluated, for the
 * location Go puts in its errors; the variable stack; the output, within TEMPLATE_LIMITS.
 */
import { TemplateError } from './errors.js';
import { nodeString, type Node } from './nodes.js';

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

export class ExecState {
  private node: Node | null = null;
  protected vars: { name: string; value: unknown }[] = [];
  private out: string[] = [];
  private outChars = 0;
  private steps = 0;

  constructor(
    private readonly name: string,
    private readonly text: string,
  ) {}

  /** Starts a rendering over `data` (`$`). */
  protected begin(data: unknown): void {
    this.vars = [{ name: '$', value: data }];
    this.out = [];
    this.outChars = 0;
    this.steps = 0;
  }

  protected output(): string {
    return this.out.join('');
  }

  // --- errors -------------------------------------------------------------

  protected errorf(msg: string): never {
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

  protected at(n: Node): void {
    this.node = n;
  }

  // --- bounds (TEMPLATE_LIMITS) --------------------------------------------

  protected emit(s: string): void {
    this.outChars += s.length;
    if (this.outChars > TEMPLATE_LIMITS.outputChars)
      this.errorf(
        `the output is longer than ${TEMPLATE_LIMITS.outputChars} characters, more than pawl writes into a commit message`,
      );
    this.out.push(s);
  }

  protected step(): void {
    if (++this.steps > TEMPLATE_LIMITS.steps)
      this.errorf(
        `the template took more than ${TEMPLATE_LIMITS.steps} steps (nodes and range iterations), more than pawl spends on a commit message`,
      );
  }

  /** A function's result, checked against the bounds before it is used or kept in a variable. */
  protected bounded(name: string, v: unknown, node: Node): unknown {
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

  protected mark(): number {
    return this.vars.length;
  }

  protected pop(mark: number): void {
    this.vars.length = mark;
  }

  protected push(name: string, value: unknown): void {
    this.vars.push({ name, value });
  }

  protected setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }

  protected setTopVar(n: number, value: unknown): void {
    this.vars[this.vars.length - n]!.value = value;
  }

  protected varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) return this.vars[i]!.value;
    }
    this.errorf(`undefined variable: ${name}`);
  }
}
