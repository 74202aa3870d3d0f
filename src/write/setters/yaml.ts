/**
 * The `yaml` library, loaded on first use. A setter scan of plain manifests never needs it
 * (simple.ts reads them), and loading it is a noticeable part of a short CLI run.
 */
import { createRequire } from 'node:module';

type Yaml = typeof import('yaml');

let loaded: Yaml | undefined;

export function yamlLibrary(): Yaml {
  return (loaded ??= createRequire(import.meta.url)('yaml') as Yaml);
}
