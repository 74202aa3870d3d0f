import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runCli } from '../helpers/world.js';

/** A directory of config files for one test; removed by the returned cleanup. */
export async function configDir(
  files: Record<string, string>,
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-config-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** 1-based line of the first line containing `needle`. */
export function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`fixture has no line containing ${needle}`);
  return i + 1;
}

export const REPO = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: app
  namespace: apps
spec:
  image: ghcr.io/org/app
  interval: 5m
`;

export const POLICY = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: app
  namespace: apps
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: ">=1.0.0"
`;

export const GIT = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: apps
spec:
  url: https://github.com/org/fleet
  interval: 1m
  ref:
    branch: main
`;

/**
 * An ImageUpdateAutomation `apps/fleet` with more under `spec.git`: `commit` lines go under
 * `git.commit` (after the author), `push` lines under `git.push:` (which is left out without them).
 */
export const automationWith = (
  more: { commit?: string; push?: string },
  apiVersion = 'image.pawl.dev/v1alpha1',
): string => `apiVersion: ${apiVersion}
kind: ImageUpdateAutomation
metadata:
  name: fleet
  namespace: apps
spec:
  interval: 30m
  sourceRef:
    kind: GitRepository
    name: fleet
  git:
    commit:
      author:
        name: pawl
        email: pawl@example.com
${more.commit !== undefined ? `${more.commit}\n` : ''}${more.push !== undefined ? `    push:\n${more.push}\n` : ''}  update:
    path: ./clusters/prod
`;

/** `pawl validate` over one file `f.yaml` holding `text`: its exit code, output, and the file's path. */
export async function validateText(text: string): Promise<{ code: number; stdout: string; file: string }> {
  const { dir, cleanup } = await configDir({ 'f.yaml': text });
  try {
    const r = await runCli(['validate', '-c', dir], { env: { PAWL_LOG_LEVEL: 'silent' } });
    return { code: r.code, stdout: r.stdout + r.stderr, file: join(dir, 'f.yaml') };
  } finally {
    await cleanup();
  }
}

/** Flux's ImageUpdateAutomation `apps/fleet`, pushing to main. */
export const AUTOMATION = automationWith({ push: '      branch: main' }, 'image.toolkit.fluxcd.io/v1beta2');

/** A valid set of objects, one document each, joined as one multi-document file. */
export const VALID = [REPO, POLICY, GIT, AUTOMATION].join('---\n');
