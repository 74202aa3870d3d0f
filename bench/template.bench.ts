/**
 * Commit message templates: parse Flux's documented Objects template, build TemplateData for
 * 500 changes (500 files, one Deployment each), render it, and the Gerrit Change-Id template
 * (sha256 over the printed data). Figures for one commit of the issue-4 bench scale; the target
 * is that a message costs a few milliseconds of the 5 s pass. Prints figures; asserts nothing.
 */
import { performance } from 'node:perf_hooks';
import {
  fluxTemplateData,
  parseCommitMessageTemplate,
  renderCommitMessage,
  type TemplateChange,
} from '../src/config/index.js';
import { FLUX_DOC_OBJECTS_TEMPLATE } from '../test/helpers/flux-templates.js';

const OBJECTS = FLUX_DOC_OBJECTS_TEMPLATE;

const GERRIT = `Perform automatic image update

Automation name: {{ .AutomationObject }}

{{- $ChangeId := .AutomationObject -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.FileChanges | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Objects | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Changes | toString ) }}
Change-Id: {{ printf "I%s" ( sha256sum $ChangeId | trunc 40 ) }}
`;

const changes: TemplateChange[] = Array.from({ length: 500 }, (_, i) => ({
  file: `apps/app-${String(i).padStart(3, '0')}/deployment.yaml`,
  object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'apps', name: `app-${i}` },
  oldValue: `registry.example.com/app-${i}:1.0.${i % 10}`,
  newValue: `registry.example.com/app-${i}:1.0.${(i % 10) + 1}`,
  setter: `flux-system:app-${i}`,
}));

function time(label: string, runs: number, fn: () => unknown): void {
  fn();
  const start = performance.now();
  for (let i = 0; i < runs; i++) fn();
  const ms = (performance.now() - start) / runs;
  process.stdout.write(`${label.padEnd(48)} ${ms.toFixed(3)} ms\n`);
}

const automation = { namespace: 'flux-system', name: 'apps' };
time('parse the Objects template', 200, () => parseCommitMessageTemplate(OBJECTS));
time('fluxTemplateData, 500 changes', 50, () => fluxTemplateData(automation, changes, { cluster: 'prod' }));
const data = fluxTemplateData(automation, changes, { cluster: 'prod' });
time('render Objects template, 500 changes', 50, () => renderCommitMessage(OBJECTS, data));
time('render Gerrit Change-Id template, 500 changes', 50, () => renderCommitMessage(GERRIT, data));
const out = renderCommitMessage(OBJECTS, data);
process.stdout.write(`message size: ${out.length} chars, ${out.split('\n').length} lines\n`);
process.stdout.write(`peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB\n`);
