/**
 * The built CLI's launcher (src/cli/launch.ts) writes the V8 code cache after a one-shot
 * command's work. The daemon never finishes its work, and turns TurboFan on after its first pass
 * (a flag change: V8 would refuse a cache made after it), so it asks for the cache to be written
 * at that moment instead. The launcher is a bundle of its own, so the two meet on globalThis.
 */
const KEY = Symbol.for('pawl.codeCache.save');

type Holder = { [KEY]?: () => void };

/** The launcher's: what writes the cache. */
export function onSaveCodeCache(save: () => void): void {
  (globalThis as Holder)[KEY] = save;
}

/** Writes the code cache now, once, if this process was started by the launcher; else nothing. */
export function saveCodeCache(): void {
  const holder = globalThis as Holder;
  const save = holder[KEY];
  holder[KEY] = undefined;
  save?.();
}
