/**
 * A template that cannot be parsed or executed. The message is worded as Go's
 * text/template words it (`template: NAME:LINE: …` for parse errors,
 * `template: NAME:LINE:COL: executing "NAME" at <…>: …` at run time), so a
 * message a Flux user has seen before reads the same here.
 */
export class TemplateError extends Error {
  override name = 'TemplateError';
  constructor(
    message: string,
    /** 1-based line of the problem, when known. */
    readonly line?: number,
    /** 1-based column (in bytes, as Go counts), when known. */
    readonly column?: number,
  ) {
    super(message);
  }
}

/** Raised by a template function; the executor wraps it as `error calling NAME: …`. */
export class FuncError extends Error {
  override name = 'FuncError';
}
