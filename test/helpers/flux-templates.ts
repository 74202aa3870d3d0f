/**
 * Commit message templates from Flux's ImageUpdateAutomation documentation
 * (docs/spec/v1/imageupdateautomations.md), read from YAML exactly as the docs write them, so
 * the text is what Flux receives. Shared by the template tests, the end-to-end test and the bench.
 */
import { parse as parseYaml } from 'yaml';

/** The `messageTemplate` of a documented `spec.commit` snippet. */
export function fluxDocTemplate(doc: string): string {
  const parsed = parseYaml(doc) as { spec: { commit: { messageTemplate: string } } };
  return parsed.spec.commit.messageTemplate;
}

/** The "Objects" example: files, then each object with its changes. */
export const FLUX_DOC_OBJECTS_TEMPLATE = fluxDocTemplate(`spec:
  commit:
    messageTemplate: |
      Automated image update
      
      Automation name: {{ .AutomationObject }}

      Files:
      {{ range $filename, $_ := .Changed.FileChanges -}}
      - {{ $filename }}
      {{ end -}}

      Objects:
      {{ range $resource, $changes := .Changed.Objects -}}
      - {{ $resource.Kind }} {{ $resource.Name }}
        Changes:
      {{- range $_, $change := $changes }}
          - {{ $change.OldValue }} -> {{ $change.NewValue }}
      {{ end -}}
      {{ end -}}
`);
