/**
 * Go's text/template (Go's syntax, built-ins and error words, plus the sprig functions of
 * Flux's HermeticTxtFuncMap), over Go-typed values. Flux's commit-message data is in config/commit-data.ts.
 */
export { TemplateError } from './errors.js';
export { parseTemplate, TEMPLATE_FUNCS, type Template } from './template.js';
export { compareKeys, GoMap, GoStruct, typedSlice, type GoField, type GoMethod } from './values.js';
