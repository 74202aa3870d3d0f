/** Objects and commit messages read from git in one process each, and the paths git prints. */
import { parseTrailerLines } from '../guard/index.js';
import { git, gitBuffer } from './exec.js';

/** path → blob id at `rev`, for the given paths, through one `git ls-tree`. */
export async function treeBlobs(cwd: string, rev: string, paths: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (paths.length === 0) return out;
  const { stdout } = await git(['ls-tree', '-r', '-z', '--full-tree', rev, '--', ...new Set(paths)], { cwd });
  for (const entry of stdout.split('\0')) {
    const m = /^\d+ blob ([0-9a-f]+)\t([\s\S]*)$/.exec(entry);
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

/** `rev:path` or object id → file text (null when missing), through one `git cat-file --batch`. */
export async function catFiles(cwd: string, specs: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (specs.length === 0) return out;
  // Paths with newlines cannot be asked for on a line-based protocol.
  const asked = specs.filter((s) => !s.includes('\n'));
  for (const s of specs) if (s.includes('\n')) out.set(s, null);
  // Bytes, not a string: the sizes in cat-file's headers count bytes.
  const { stdout: buf } = await gitBuffer(['cat-file', '--batch'], {
    cwd,
    input: asked.map((s) => `${s}\n`).join(''),
  });
  let pos = 0;
  for (const spec of asked) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) break;
    const header = buf.subarray(pos, nl).toString('utf8');
    pos = nl + 1;
    const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
    if (!m) {
      out.set(spec, null);
      continue;
    }
    const size = Number(m[2]);
    out.set(spec, m[1] === 'blob' ? buf.subarray(pos, pos + size).toString('utf8') : null);
    pos += size + 1;
  }
  return out;
}

export async function commitTrailers(
  cwd: string,
  commits: string[],
): Promise<Map<string, { key: string; value: string }[]>> {
  const out = new Map<string, { key: string; value: string }[]>();
  if (commits.length === 0) return out;
  const { stdout } = await git(
    [
      '-c',
      'log.showSignature=false',
      'log',
      '--stdin',
      '--no-walk=unsorted',
      '--format=%x1e%H%x00%(trailers:unfold,only)',
    ],
    {
      cwd,
      input: commits.join('\n') + '\n',
    },
  );
  for (const block of stdout.split('\x1e')) {
    const z = block.indexOf('\0');
    if (z < 0) continue;
    out.set(block.slice(0, z).trim(), parseTrailerLines(block.slice(z + 1)));
  }
  return out;
}

export function stripPrefix(p: string): string {
  const s = unquote(p.trim());
  return s.startsWith('a/') || s.startsWith('b/') ? s.slice(2) : s;
}

// Git C-quotes unusual paths ("a\tb"); JSON's escapes cover what git emits for them, except octal bytes.
export function unquote(p: string): string {
  if (!(p.startsWith('"') && p.endsWith('"'))) return p;
  const bytes: number[] = [];
  const body = p.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const n = body[++i] ?? '';
    if (/[0-7]/.test(n)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else
      bytes.push(
        ({ n: 10, t: 9, r: 13, '"': 34, '\\': 92, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[n] ??
          n.charCodeAt(0),
      );
  }
  return Buffer.from(bytes).toString('utf8');
}
