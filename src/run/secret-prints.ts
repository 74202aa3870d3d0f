/**
 * Fingerprints of the Secrets each ImageRepository uses (issue 23, item 6): after a person fixes a
 * registry password, the next run must not repeat the old 401 from the stored scan until the
 * interval is up. A repository whose Secrets changed since its last scan is scanned now. The
 * prints are kept in the state directory beside the store (`secret-prints.json`: repository to
 * sha256 of its Secrets' keys and values); nothing of the values themselves is written.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { refKey, type Config, type ImageRepository } from '../config/index.js';

const FILE = 'secret-prints.json';

/** sha256 of the repository's secretRef and certSecretRef Secrets (names, keys, values); '' without any. */
export function secretPrint(config: Config, repo: ImageRepository): string {
  const ns = repo.metadata.namespace;
  const names = [repo.spec.secretRef, repo.spec.certSecretRef].filter(
    (n): n is string => typeof n === 'string',
  );
  if (names.length === 0) return '';
  const h = createHash('sha256');
  for (const name of names) {
    h.update(`${ns}/${name}\0`);
    const data = config.secrets.get(`${ns}/${name}`)?.data ?? {};
    for (const key of Object.keys(data).sort()) h.update(key).update('\0').update(data[key]!).update('\0');
  }
  return h.digest('hex');
}

export async function readPrints(stateDir: string): Promise<Record<string, string>> {
  const text = await readFile(join(stateDir, FILE), 'utf8').catch(() => '{}');
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** Records the prints of the repositories just scanned; the others keep theirs. */
export async function writePrints(
  stateDir: string,
  before: Record<string, string>,
  scanned: readonly ImageRepository[],
  config: Config,
): Promise<void> {
  // Most passes change no print: the file is written (and the record copied) only when one did.
  const changed = new Map<string, string>();
  for (const r of scanned) {
    const key = refKey(r.metadata);
    const print = secretPrint(config, r);
    if (before[key] !== print) changed.set(key, print);
  }
  if (changed.size === 0) return;
  const next = { ...before, ...Object.fromEntries(changed) };
  await mkdir(stateDir, { recursive: true });
  const tmp = join(stateDir, `${FILE}.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify(next, null, 1) + '\n', { mode: 0o600 });
  await rename(tmp, join(stateDir, FILE));
}
