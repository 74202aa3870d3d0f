/**
 * Commit message templates: Go's text/template as Flux's image-automation-controller
 * renders it (Go's syntax, built-ins and error words, plus the sprig functions of
 * Flux's HermeticTxtFuncMap), and the data Flux gives it.
 */
export { TemplateError } from './errors.js';
export { parseTemplate, TEMPLATE_FUNCS, type Template } from './template.js';
export {
  checkCommitMessageTemplate,
  DEFAULT_MESSAGE_TEMPLATE,
  fluxTemplateData,
  parseCommitMessageTemplate,
  renderCommitMessage,
  TEMPLATE_NAME,
  type TemplateChange,
} from './flux.js';
export { GoMap, GoStruct, typedSlice, type GoField, type GoMethod } from './values.js';
