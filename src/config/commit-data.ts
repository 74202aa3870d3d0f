/**
 * The data a Flux commit message template sees, built as image-automation-controller
 * v1 builds it (internal/source/source.go `TemplateData`, internal/update/result.go
 * `Result`), with the same Go types, so that printing, ranging and sprig's
 * toString give what Flux gives:
 *
 *   TemplateData{ AutomationObject types.NamespacedName; Changed update.Result; Values map[string]string }
 *   Result{ FileChanges map[string]ObjectChanges } + methods Changes() []Change, Objects() ObjectChanges
 *   ObjectChanges map[ObjectIdentifier][]Change
 *   ObjectIdentifier{ yaml.ResourceIdentifier{ TypeMeta{APIVersion, Kind}, NameMeta{Name, Namespace} } }
 *   Change{ OldValue, NewValue, Setter string }
 *
 * `{{ .AutomationObject }}` prints `namespace/name` (NamespacedName.String()).
 * An ObjectIdentifier has no String(): `%v` gives `{{{apps/v1 Deployment} {name ns}}}`.
 * Where Flux iterates a Go map (Changes(), Objects()), its order is unspecified;
 * pawl uses file order, then object order (Go's sorted map order), then change order.
 */
import {
  compareKeys,
  GoMap,
  GoStruct,
  parseTemplate,
  TemplateError,
  typedSlice,
  type Template,
} from '../go/index.js';

export interface TemplateChange {
  /**
   * Path of the file with forward slashes, relative to the automation's `spec.update.path`: Flux
   * reads the tree from that directory and keys FileChanges by kyaml's path annotation
   * (internal/update/setters.go; update_test.go expects `marked.yaml`, not `testdata/…/marked.yaml`).
   */
  file: string;
  object: { apiVersion?: string; kind: string; namespace: string; name: string };
  oldValue: string;
  newValue: string;
  /** The marker's setter, e.g. `flux-system:podinfo` or `flux-system:podinfo:tag`. */
  setter: string;
}

/** Flux's defaultMessageTemplate, used when `messageTemplate` is empty or absent. */
export const DEFAULT_MESSAGE_TEMPLATE = 'Update from image update automation';

/** The name Flux gives the template, so error messages read `template: commit message:3: …`. */
export const TEMPLATE_NAME = 'commit message';

/** The data never changes once built, so each method result is computed once. */
function once<T>(fn: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = fn();
      done = true;
    }
    return value;
  };
}

function namespacedName(namespace: string, name: string): GoStruct {
  return new GoStruct(
    'types.NamespacedName',
    [
      { name: 'Namespace', value: namespace },
      { name: 'Name', value: name },
    ],
    {},
    () => `${namespace}/${name}`,
  );
}

function objectIdentifier(o: TemplateChange['object']): GoStruct {
  const typeMeta = new GoStruct('yaml.TypeMeta', [
    { name: 'APIVersion', value: o.apiVersion ?? '', json: { name: 'apiVersion', omitEmpty: true } },
    { name: 'Kind', value: o.kind, json: { name: 'kind', omitEmpty: true } },
  ]);
  const nameMeta = new GoStruct('yaml.NameMeta', [
    { name: 'Name', value: o.name, json: { name: 'name', omitEmpty: true } },
    { name: 'Namespace', value: o.namespace, json: { name: 'namespace', omitEmpty: true } },
  ]);
  const resourceIdentifier = new GoStruct('yaml.ResourceIdentifier', [
    { name: 'TypeMeta', value: typeMeta, embedded: true },
    { name: 'NameMeta', value: nameMeta, embedded: true },
  ]);
  return new GoStruct('update.ObjectIdentifier', [
    { name: 'ResourceIdentifier', value: resourceIdentifier, embedded: true },
  ]);
}

function change(c: TemplateChange): GoStruct {
  return new GoStruct('update.Change', [
    { name: 'OldValue', value: c.oldValue },
    { name: 'NewValue', value: c.newValue },
    { name: 'Setter', value: c.setter },
  ]);
}

function changeSlice(items: GoStruct[]): GoStruct[] {
  return typedSlice(items, '[]update.Change');
}

function objectChanges(entries: Map<GoStruct, GoStruct[]>): GoMap {
  return new GoMap('update.ObjectChanges', entries, changeSlice([]), false);
}

/**
 * Builds Flux's TemplateData for one commit.
 * @param automation the ImageUpdateAutomation's namespace and name
 * @param changes every value pawl changed, in file order
 * @param values the automation's `messageTemplateValues`
 */
export function fluxTemplateData(
  automation: { namespace: string; name: string },
  changes: readonly TemplateChange[],
  values: Readonly<Record<string, string>> = {},
): unknown {
  // One ObjectIdentifier value per identity, so Objects() merges the same object across files as a Go map would.
  const ids = new Map<string, GoStruct>();
  const idFor = (o: TemplateChange['object']): GoStruct => {
    const key = JSON.stringify([o.apiVersion ?? '', o.kind, o.name, o.namespace]);
    let id = ids.get(key);
    if (!id) {
      id = objectIdentifier(o);
      ids.set(key, id);
    }
    return id;
  };

  const files = new Map<string, Map<GoStruct, GoStruct[]>>();
  for (const c of changes) {
    let objects = files.get(c.file);
    if (!objects) {
      objects = new Map();
      files.set(c.file, objects);
    }
    const id = idFor(c.object);
    let list = objects.get(id);
    if (!list) {
      list = changeSlice([]);
      objects.set(id, list);
    }
    list.push(change(c));
  }

  const fileChanges = new GoMap(
    'map[string]update.ObjectChanges',
    new Map([...files].map(([file, objects]) => [file, objectChanges(objects)])),
    objectChanges(new Map()),
  );
  const sortedFiles = [...files.keys()].sort((a, b) => compareKeys(a, b));
  const sortedObjects = (objects: Map<GoStruct, GoStruct[]>): [GoStruct, GoStruct[]][] =>
    [...objects].sort((a, b) => compareKeys(a[0], b[0]));

  const result = new GoStruct('update.Result', [{ name: 'FileChanges', value: fileChanges }], {
    // Changes returns all the changes that were made in at least one update (deduplicated).
    Changes: {
      params: [],
      call: once(() => {
        const seen = new Set<string>();
        const out = changeSlice([]);
        for (const file of sortedFiles) {
          for (const [, list] of sortedObjects(files.get(file)!)) {
            for (const c of list) {
              const key = JSON.stringify(c.fields.map((f) => f.value));
              if (seen.has(key)) continue;
              seen.add(key);
              out.push(c);
            }
          }
        }
        return out;
      }),
    },
    // Objects returns ObjectChanges regardless of file. The same object in two files (a base
    // and an overlay) gets both files' changes, appended in file order: Flux 1.2.0 and later
    // (`result[obj] = append(result[obj], change...)`); before, the last file's list won.
    Objects: {
      params: [],
      call: once(() => {
        const out = new Map<GoStruct, GoStruct[]>();
        for (const file of sortedFiles) {
          for (const [id, list] of files.get(file)!)
            out.set(id, changeSlice([...(out.get(id) ?? []), ...list]));
        }
        return objectChanges(out);
      }),
    },
  });

  return new GoStruct('source.TemplateData', [
    { name: 'AutomationObject', value: namespacedName(automation.namespace, automation.name) },
    { name: 'Changed', value: result },
    { name: 'Values', value: new GoMap('map[string]string', new Map(Object.entries(values)), '') },
  ]);
}

/** Flux's messages for the fields that v1 removed (internal/source/source.go, RemovedTemplateFieldError). */
function removedFieldError(e: TemplateError): TemplateError | null {
  if (e.message.includes("can't evaluate field Updated in type source.TemplateData")) {
    return new TemplateError(
      "template uses removed '.Updated' field. Please use '.Changed' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template",
      e.line,
      e.column,
    );
  }
  if (e.message.includes("can't evaluate field ImageResult in type update.Result")) {
    return new TemplateError(
      "template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or '.Changed.Objects' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template",
      e.line,
      e.column,
    );
  }
  return null;
}

/** Parses a commit message template as Flux does: empty or absent means the default message. */
export function parseCommitMessageTemplate(template: string | undefined): Template {
  return parseTemplate(
    template === undefined || template === '' ? DEFAULT_MESSAGE_TEMPLATE : template,
    TEMPLATE_NAME,
  );
}

/**
 * Renders a commit message as Flux renders it. Throws TemplateError (Go's words,
 * or Flux's for the removed `.Updated` / `.Changed.ImageResult` fields).
 */
export function renderCommitMessage(template: string | undefined, data: unknown): string {
  const t = parseCommitMessageTemplate(template);
  try {
    return t.execute(data);
  } catch (e) {
    if (e instanceof TemplateError) throw removedFieldError(e) ?? e;
    throw e;
  }
}

/**
 * Checks a template before any run: parses it, then renders it over a sample
 * change with the automation's own values, so a template that would fail at
 * run time for every commit (a removed field, a wrong argument type, an
 * unsupported function) is reported at `pawl validate`. Throws TemplateError.
 */
export function checkCommitMessageTemplate(
  template: string | undefined,
  values: Readonly<Record<string, string>> = {},
  automation: { namespace: string; name: string } = { namespace: 'flux-system', name: 'automation' },
): void {
  const sample: TemplateChange[] = [
    {
      file: 'apps/app/deployment.yaml',
      object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'app' },
      oldValue: 'registry.example.com/app:1.0.0',
      newValue: 'registry.example.com/app:1.0.1',
      setter: `${automation.namespace}:app`,
    },
  ];
  renderCommitMessage(template, fluxTemplateData(automation, sample, values));
}
