/**
 * The commit message templates of Flux's documentation and tests, rendered over
 * realistic data and compared with the text Flux produces.
 *
 * Sources:
 * - fluxcd/image-automation-controller docs/spec/v1/imageupdateautomations.md, "Message Template",
 *   "Gerrit" and "Gitea" sections (the same text as fluxcd.io/flux/components/image/imageupdateautomations/).
 * - fluxcd/image-automation-controller internal/source/source_test.go (testCommitTemplateResultV2 and its
 *   wantCommitMsg: the message Flux itself asserts).
 * - flux2 `flux create image update --commit-template` examples (the flux CLI's usage).
 * Expected texts were derived by stepping through Go's text/template rules (trim markers,
 * sorted map ranges, fmt's %v) and are commented where the derivation is not obvious.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import {
  checkCommitMessageTemplate,
  DEFAULT_MESSAGE_TEMPLATE,
  fluxTemplateData,
  parseCommitMessageTemplate,
  renderCommitMessage,
  type TemplateChange,
} from '../../src/config/index.js';
import { TemplateError } from '../../src/go/index.js';
import { FLUX_DOC_OBJECTS_TEMPLATE, fluxDocTemplate } from '../helpers/flux-templates.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const conformanceDir =
  process.env.PAWL_CONFORMANCE_DIR ?? join(repoRoot, '..', 'shared', 'conformance', 'flux');

interface FluxSetterCase {
  id: string;
  policies: { name: string; latestRef: { name: string; tag: string; digest: string } }[];
  expectedResult: {
    FileChanges: Record<
      string,
      {
        object: TemplateChange['object'];
        changes: { OldValue: string; NewValue: string; Setter: string }[];
      }[]
    >;
  };
}

function fluxCases(): FluxSetterCase[] {
  return (JSON.parse(readFileSync(join(conformanceDir, 'cases.json'), 'utf8')) as { cases: FluxSetterCase[] })
    .cases;
}

const PODINFO: TemplateChange = {
  file: 'apps/podinfo/deployment.yaml',
  object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'podinfo' },
  oldValue: 'ghcr.io/stefanprodan/podinfo:5.0.0',
  newValue: 'ghcr.io/stefanprodan/podinfo:5.0.3',
  setter: 'default:podinfo-policy',
};

const automation = { namespace: 'default', name: 'podinfo-update' };

const DOC_FUNCTIONS_TEMPLATE = fluxDocTemplate(`spec:
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
      - {{ $resource.Kind | lower }} {{ $resource.Name | lower }}
        Changes:
      {{- range $_, $change := $changes }}
        {{ if contains "5.0.3" $change.NewValue -}}
          - {{ $change.OldValue }} -> {{ $change.NewValue }}
        {{ else -}}
          [skip ci] wrong image
        {{ end -}}
      {{ end -}}
      {{ end -}}
`);

const DOC_GERRIT_TEMPLATE = fluxDocTemplate(`spec:
  commit:
    messageTemplate: |
      Perform automatic image update

      Automation name: {{ .AutomationObject }}

      {{- $ChangeId := .AutomationObject -}}
      {{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.FileChanges | toString ) -}}
      {{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Objects | toString ) -}}
      {{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Changes | toString ) }}
      Change-Id: {{ printf "I%s" ( sha256sum $ChangeId | trunc 40 ) }}
`);

// The Gitea example is a single-quoted YAML scalar folded over two lines.
const DOC_GITEA_TEMPLATE = fluxDocTemplate(`spec:
  commit:
    messageTemplate: '{{range .Changed.Changes}}{{print .OldValue}} -> {{println
      .NewValue}}{{end}}'
`);

describe('Flux documentation examples (docs/spec/v1/imageupdateautomations.md)', () => {
  test('the plain message is used as it is', () => {
    const t = fluxDocTemplate(`spec:
  commit:
    messageTemplate: |-
      Automated image update by Flux
`);
    assert.equal(
      renderCommitMessage(t, fluxTemplateData(automation, [PODINFO], {})),
      'Automated image update by Flux',
    );
  });

  test('no template renders the default message', () => {
    const data = fluxTemplateData(automation, [PODINFO], {});
    assert.equal(renderCommitMessage(undefined, data), 'Update from image update automation');
    assert.equal(renderCommitMessage('', data), DEFAULT_MESSAGE_TEMPLATE);
  });

  test('ranging over .Changed.FileChanges and .Changed.Objects', () => {
    // `{{ end -}}` eats the blank line before "Objects:"; the inner range's text starts with a newline.
    assert.equal(
      renderCommitMessage(FLUX_DOC_OBJECTS_TEMPLATE, fluxTemplateData(automation, [PODINFO], {})),
      'Automated image update\n' +
        '\n' +
        'Automation name: default/podinfo-update\n' +
        '\n' +
        'Files:\n' +
        '- apps/podinfo/deployment.yaml\n' +
        'Objects:\n' +
        '- Deployment podinfo\n' +
        '  Changes:\n' +
        '    - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3\n',
    );
  });

  test('.Changed.Objects appends the changes of one object found in two files (base and overlay), as Flux >= 1.2.0', () => {
    // fluxcd/image-automation-controller 78f806b "Preserve all object changes" (v1.2.0):
    // Result.Objects() appends per ObjectIdentifier instead of keeping one file's list.
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'podinfo' };
    const changes: TemplateChange[] = [
      {
        file: 'base/deployment.yaml',
        object: deployment,
        oldValue: 'podinfo:v1.0.0',
        newValue: 'podinfo:v1.0.1',
        setter: 'flux-system:podinfo',
      },
      {
        file: 'overlays/prod/deployment.yaml',
        object: deployment,
        oldValue: 'podinfo-sidecar:2.0.0',
        newValue: 'podinfo-sidecar:2.1.0',
        setter: 'flux-system:sidecar',
      },
    ];
    const data = fluxTemplateData(automation, changes, {});
    assert.equal(
      renderCommitMessage(FLUX_DOC_OBJECTS_TEMPLATE, data),
      'Automated image update\n' +
        '\n' +
        'Automation name: default/podinfo-update\n' +
        '\n' +
        'Files:\n' +
        '- base/deployment.yaml\n' +
        '- overlays/prod/deployment.yaml\n' +
        'Objects:\n' +
        '- Deployment podinfo\n' +
        '  Changes:\n' +
        // The inner range's body is "\n    - … -> …\n", so Go leaves a blank line between changes.
        '    - podinfo:v1.0.0 -> podinfo:v1.0.1\n' +
        '\n' +
        '    - podinfo-sidecar:2.0.0 -> podinfo-sidecar:2.1.0\n',
    );
    assert.equal(renderCommitMessage('{{ len .Changed.Objects }}', data), '1');
    // FileChanges still keeps each file's own list.
    assert.equal(
      renderCommitMessage(
        '{{ range $f, $o := .Changed.FileChanges }}{{ $f }}:{{ range $_, $c := $o }}{{ len $c }}{{ end }};{{ end }}',
        data,
      ),
      'base/deployment.yaml:1;overlays/prod/deployment.yaml:1;',
    );
  });

  test('the same with several files and objects: files and objects come in Go map order', () => {
    const changes: TemplateChange[] = [
      {
        file: 'clusters/prod/kustomization.yaml',
        object: {
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          namespace: '',
          name: '',
        },
        oldValue: '1.2.0',
        newValue: '1.3.0',
        setter: 'flux-system:api:tag',
      },
      {
        file: 'apps/worker/cronjob.yaml',
        object: { apiVersion: 'batch/v1', kind: 'CronJob', namespace: 'jobs', name: 'worker' },
        oldValue: 'registry.example.com/worker:2.0.0',
        newValue: 'registry.example.com/worker:2.1.0',
        setter: 'flux-system:worker',
      },
      {
        file: 'apps/api/deployment.yaml',
        object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'api', name: 'api' },
        oldValue: 'registry.example.com/api:1.2.0',
        newValue: 'registry.example.com/api:1.3.0',
        setter: 'flux-system:api',
      },
    ];
    // Objects sort by ObjectIdentifier fields in order: APIVersion, Kind, Name, Namespace.
    assert.equal(
      renderCommitMessage(
        FLUX_DOC_OBJECTS_TEMPLATE,
        fluxTemplateData({ namespace: 'flux-system', name: 'apps' }, changes, {}),
      ),
      'Automated image update\n' +
        '\n' +
        'Automation name: flux-system/apps\n' +
        '\n' +
        'Files:\n' +
        '- apps/api/deployment.yaml\n' +
        '- apps/worker/cronjob.yaml\n' +
        '- clusters/prod/kustomization.yaml\n' +
        'Objects:\n' +
        '- Deployment api\n' +
        '  Changes:\n' +
        '    - registry.example.com/api:1.2.0 -> registry.example.com/api:1.3.0\n' +
        '- CronJob worker\n' +
        '  Changes:\n' +
        '    - registry.example.com/worker:2.0.0 -> registry.example.com/worker:2.1.0\n' +
        '- Kustomization \n' +
        '  Changes:\n' +
        '    - 1.2.0 -> 1.3.0\n',
    );
  });

  test('template functions: lower and contains', () => {
    // The if/else branches keep the "\n  " that precedes {{ else -}} / {{ end -}}, so the message ends in two spaces.
    assert.equal(
      renderCommitMessage(DOC_FUNCTIONS_TEMPLATE, fluxTemplateData(automation, [PODINFO], {})),
      'Automated image update\n' +
        '\n' +
        'Automation name: default/podinfo-update\n' +
        '\n' +
        'Files:\n' +
        '- apps/podinfo/deployment.yaml\n' +
        'Objects:\n' +
        '- deployment podinfo\n' +
        '  Changes:\n' +
        '  - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3\n' +
        '  ',
    );
    const other = { ...PODINFO, newValue: 'ghcr.io/stefanprodan/podinfo:5.0.2' };
    assert.match(
      renderCommitMessage(DOC_FUNCTIONS_TEMPLATE, fluxTemplateData(automation, [other], {})),
      /\n {2}Changes:\n {2}\[skip ci\] wrong image\n {2}$/,
    );
  });

  test('.Values from messageTemplateValues', () => {
    const t = fluxDocTemplate(`spec:
  commit:
    messageTemplate: |-
      Automated image update by Flux for cluster {{ .Values.cluster }}.
`);
    assert.equal(
      renderCommitMessage(t, fluxTemplateData(automation, [PODINFO], { cluster: 'prod' })),
      'Automated image update by Flux for cluster prod.',
    );
    // A key that is not set prints as Go prints a missing map key.
    assert.equal(
      renderCommitMessage(t, fluxTemplateData(automation, [PODINFO], {})),
      'Automated image update by Flux for cluster <no value>.',
    );
  });

  test('Gerrit: a Change-Id from sha256sum over the printed change data', () => {
    // What Go's fmt prints for each value (toString is %v for types without String()):
    const fileChanges =
      'map[apps/podinfo/deployment.yaml:map[{{{apps/v1 Deployment} {podinfo default}}}:' +
      '[{ghcr.io/stefanprodan/podinfo:5.0.0 ghcr.io/stefanprodan/podinfo:5.0.3 default:podinfo-policy}]]]';
    const objects =
      'map[{{{apps/v1 Deployment} {podinfo default}}}:' +
      '[{ghcr.io/stefanprodan/podinfo:5.0.0 ghcr.io/stefanprodan/podinfo:5.0.3 default:podinfo-policy}]]';
    const list =
      '[{ghcr.io/stefanprodan/podinfo:5.0.0 ghcr.io/stefanprodan/podinfo:5.0.3 default:podinfo-policy}]';
    const changeId = `default/podinfo-update${fileChanges}${objects}${list}`;
    const sum = createHash('sha256').update(changeId).digest('hex').slice(0, 40);
    assert.equal(
      renderCommitMessage(DOC_GERRIT_TEMPLATE, fluxTemplateData(automation, [PODINFO], {})),
      `Perform automatic image update\n\nAutomation name: default/podinfo-update\nChange-Id: I${sum}\n`,
    );
  });

  test('Gitea: print and println over .Changed.Changes', () => {
    const second: TemplateChange = {
      file: 'apps/podinfo/values.yaml',
      object: {
        apiVersion: 'helm.toolkit.fluxcd.io/v2',
        kind: 'HelmRelease',
        namespace: 'default',
        name: 'podinfo',
      },
      oldValue: '5.0.0',
      newValue: '5.0.3',
      setter: 'default:podinfo-policy:tag',
    };
    assert.equal(
      DOC_GITEA_TEMPLATE,
      '{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}',
    );
    assert.equal(
      renderCommitMessage(DOC_GITEA_TEMPLATE, fluxTemplateData(automation, [PODINFO, second], {})),
      'ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3\n5.0.0 -> 5.0.3\n',
    );
  });
});

describe("Flux's own assertions (internal/source/source_test.go)", () => {
  test('testCommitTemplateResultV2 renders wantCommitMsg', () => {
    // The fixture Flux commits against; its object has no namespace, hence "Deployment//test".
    const fixture = readFileSync(
      join(conformanceDir, 'image-automation-controller/internal/source/testdata/appconfig/deploy.yaml'),
      'utf8',
    );
    const doc = parseYaml(fixture) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string; namespace?: string };
    };
    const template = `Commit summary with ResultV2

Automation: {{ .AutomationObject }}

{{ range $filename, $objchange := .Changed.FileChanges -}}
- File: {{ $filename }}
{{- range $obj, $changes := $objchange }}
  - Object: {{ $obj.Kind }}/{{ $obj.Namespace }}/{{ $obj.Name }}
    Changes:
{{- range $_ , $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
{{ end -}}
`;
    const data = fluxTemplateData(
      { namespace: 'test-ns', name: 'test-update' },
      [
        {
          file: 'deploy.yaml',
          object: {
            apiVersion: doc.apiVersion,
            kind: doc.kind,
            namespace: doc.metadata.namespace ?? '',
            name: doc.metadata.name,
          },
          oldValue: 'helloworld:1.0.0',
          newValue: 'helloworld:1.0.1',
          setter: 'test-ns:policy1',
        },
      ],
      {},
    );
    assert.equal(
      renderCommitMessage(template, data),
      `Commit summary with ResultV2

Automation: test-ns/test-update

- File: deploy.yaml
  - Object: Deployment//test
    Changes:
    - helloworld:1.0.0 -> helloworld:1.0.1
`,
    );
  });

  test('TestUpdateWithSetters Result: file keys relative to the update path, kustomization objects without a name', () => {
    // internal/update/update_test.go expectedResult, as TemplateChanges in file order.
    // Read from Flux's own expected result (../shared/conformance/flux/cases.json), in file order.
    const setterCase = fluxCases().find((c) => c.id === 'update/setters')!;
    const changes: TemplateChange[] = Object.entries(setterCase.expectedResult.FileChanges).flatMap(
      ([file, objects]) =>
        objects.flatMap((o) =>
          o.changes.map((c) => ({
            file,
            object: o.object,
            oldValue: c.OldValue,
            newValue: c.NewValue,
            setter: c.Setter,
          })),
        ),
    );
    const updated = setterCase.policies.find((p) => p.name === 'policy')!.latestRef.name;
    const digest = setterCase.policies.find((p) => p.name === 'policy-with-digest')!.latestRef.digest;
    const data = fluxTemplateData({ namespace: 'automation-ns', name: 'update' }, changes, {});
    // Go prints the map with keys in byte order ("K" < "k") and the empty NameMeta as "{ }".
    const kid = '{{{kustomize.config.k8s.io/v1beta1 Kustomization} { }}}';
    assert.equal(
      renderCommitMessage('{{ .Changed.FileChanges }}', data),
      `map[Kustomization:map[${kid}:[{replaced ${updated} automation-ns:policy:name} {v1 v1.0.1 automation-ns:policy:tag}]] ` +
        `kustomization.yml:map[${kid}:[{replaced ${updated} automation-ns:policy:name} {v1 v1.0.1 automation-ns:policy:tag} ` +
        `{sha256:1234567890abcdef ${digest} automation-ns:policy-with-digest:digest} {image image:v1.0.0@${digest} automation-ns:policy-with-digest}]] ` +
        `marked.yaml:map[{{{batch/v1beta1 CronJob} {foo bar}}}:[{image:v1.0.0 ${updated}:v1.0.1 automation-ns:policy}]]]`,
    );
    // Changes() drops the repeated changes of the second kustomization file; Objects() has one entry per
    // object, and the Kustomization's list has both files' changes appended (2 + 4), as Flux >= 1.2.0.
    assert.equal(renderCommitMessage('{{ len .Changed.Changes }} {{ len .Changed.Objects }}', data), '5 2');
    assert.equal(
      renderCommitMessage(
        '{{ range $o, $c := .Changed.Objects }}{{ $o.Kind }}:{{ $o.Name }}:{{ len $c }};{{ end }}',
        data,
      ),
      'CronJob:foo:1;Kustomization::6;',
    );
  });

  test("a template using the removed .Updated field fails with Flux's message", () => {
    const data = fluxTemplateData(automation, [PODINFO], {});
    assert.throws(
      () => renderCommitMessage('{{ range .Updated.Images }}- {{ . }}\n{{ end }}', data),
      (e: unknown) =>
        e instanceof TemplateError &&
        e.message.startsWith("template uses removed '.Updated' field. Please use '.Changed' instead."),
    );
    assert.throws(
      () => renderCommitMessage('{{ .Changed.ImageResult }}', data),
      (e: unknown) =>
        e instanceof TemplateError &&
        e.message.startsWith("template uses removed '.Changed.ImageResult' field."),
    );
  });
});

describe('templates users write (flux CLI --commit-template and public manifests)', () => {
  const data = fluxTemplateData(automation, [PODINFO], {});

  test('chore: update images to {{range .Changed.Changes}}{{.NewValue}}{{end}}', () => {
    assert.equal(
      renderCommitMessage('chore: update images to {{range .Changed.Changes}}{{.NewValue}}{{end}}', data),
      'chore: update images to ghcr.io/stefanprodan/podinfo:5.0.3',
    );
  });

  test("a bullet list with untrimmed range actions keeps Go's blank lines", () => {
    const t =
      'Automated image update\n\n{{range .Changed.Changes}}\n- {{.OldValue}} -> {{.NewValue}}\n{{end}}\n';
    assert.equal(
      renderCommitMessage(t, data),
      'Automated image update\n\n\n- ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.0.3\n\n',
    );
  });

  test('sprig list functions over the changes', () => {
    const changes: TemplateChange[] = [
      { ...PODINFO, newValue: 'b:2', setter: 's1' },
      { ...PODINFO, file: 'x.yaml', newValue: 'a:1', setter: 's2' },
      { ...PODINFO, file: 'y.yaml', newValue: 'b:2', setter: 's1' },
    ];
    const d = fluxTemplateData(automation, changes, {});
    assert.equal(
      renderCommitMessage(
        '{{ $tags := list }}{{ range .Changed.Changes }}{{ $tags = append $tags (.NewValue | splitList ":" | last) }}{{ end }}' +
          'bump to {{ $tags | uniq | sortAlpha | join ", " }}',
        d,
      ),
      'bump to 1, 2',
    );
    assert.equal(
      renderCommitMessage(
        '{{ len .Changed.Changes }} change(s) in {{ len .Changed.FileChanges }} file(s)',
        d,
      ),
      '2 change(s) in 3 file(s)',
    );
  });

  test('printf with widths over the objects', () => {
    assert.equal(
      renderCommitMessage(
        '{{ range $o, $c := .Changed.Objects }}{{ printf "%-12s|%8s|%d" $o.Kind $o.Name (len $c) }}{{ end }}',
        data,
      ),
      'Deployment  | podinfo|1',
    );
  });
});

describe('checking a template before a run', () => {
  test('a good template passes', () => {
    checkCommitMessageTemplate(FLUX_DOC_OBJECTS_TEMPLATE);
    checkCommitMessageTemplate(DOC_GERRIT_TEMPLATE);
    checkCommitMessageTemplate('for {{ .Values.cluster | upper }}', { cluster: 'prod' });
  });

  test("parse errors and run-time errors are reported with Go's words", () => {
    assert.throws(
      () =>
        parseCommitMessageTemplate(
          'Update\n{{ range .Changed.Changes }}\n{{ .NewValue }}\n{{ end }}{{ end }}',
        ),
      { name: 'TemplateError', message: 'template: commit message:4: unexpected {{end}}' },
    );
    assert.throws(() => checkCommitMessageTemplate('{{ now | date "2006" }}'), {
      message: 'template: commit message:1: function "now" not defined',
    });
    assert.throws(() => checkCommitMessageTemplate('{{ .Updated.Images }}'), /removed '\.Updated' field/);
    // .Values.cluster is missing, so upper gets no value: Go fails the same way at run time.
    assert.throws(() => checkCommitMessageTemplate('for {{ .Values.cluster | upper }}'), {
      message:
        'template: commit message:1:25: executing "commit message" at <upper>: invalid value; expected string',
    });
  });
});
