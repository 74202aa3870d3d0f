/**
 * The bugs `npm run mutate` plants (scripts/mutate.ts), one at a time: the kinds a reviewer
 * would plant — boundaries, off-by-one, sort orders, missing trims and encodings, wrong units,
 * inverted conditions, dropped branches. Each names the test files that must fail with it.
 *
 * `find` must occur exactly once in `file` (else the entry is reported stale: the code moved
 * on, so move the entry with it). Prefer a snippet of a whole expression or line, long enough to
 * be unique and short enough to survive formatting. A mutation that cannot change behaviour (an
 * equivalent mutant) does not belong here: it would be "missed" by every test. See
 * docs/testing.md.
 */
import { SERVE_MUTATIONS } from './mutations-serve.js';

export interface Mutation {
  /** Groups the report: caught/missed per area. */
  area: string;
  /** Path from the repository root. */
  file: string;
  find: string;
  replace: string;
  description: string;
  /** Test files (from the repository root) that must fail with the mutation. */
  tests: string[];
}

const CLOUD_TESTS = [
  'test/scan/sigv4.test.ts',
  'test/scan/cloud-credentials.test.ts',
  'test/scan/cloud-endpoints.test.ts',
];
const SIGV4 = 'src/scan/registry/cloud/sigv4.ts';
const AWS = 'src/scan/registry/cloud/aws.ts';
const AZURE = 'src/scan/registry/cloud/azure.ts';
const GCP = 'src/scan/registry/cloud/gcp.ts';
const PROVIDERS = 'src/image/providers.ts';

const cloud: Mutation[] = [
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: "encodeURIComponent(s).replace(/[!'()*]/g,",
    replace: "encodeURIComponent(s).replace(/[!']/g,",
    description: "SigV4: ( ) * left unencoded (encodeURIComponent's leftovers)",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: '.toString(16).toUpperCase()}`',
    replace: '.toString(16)}`',
    description: 'SigV4: lower-case hex in the percent-encoding',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: '    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))\n',
    replace: '',
    description: 'SigV4: canonical query not sorted',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: 'ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0',
    replace: 'ak > bk ? 1 : 0',
    description: 'SigV4: a repeated query name not sorted by value',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: '.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))',
    replace: '.sort(([ak, av], [bk, bv]) => ak.localeCompare(bk) || av.localeCompare(bv))',
    description: 'SigV4: canonical query sorted by locale, not by byte',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: "lower[n]!.trim().replace(/\\s+/g, ' ')",
    replace: "lower[n]!.replace(/\\s+/g, ' ')",
    description: 'SigV4: header values not trimmed',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: "lower[n]!.trim().replace(/\\s+/g, ' ')",
    replace: 'lower[n]!.trim()',
    description: 'SigV4: inner runs of spaces in header values not folded',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: '    .map((k) => k.toLowerCase())\n    .sort();',
    replace: '    .map((k) => k.toLowerCase());',
    description: 'SigV4: signed headers not sorted',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: "if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;",
    replace: '',
    description: 'SigV4: the session token neither sent nor signed',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: '    sha256(input.body),',
    replace: "    sha256(''),",
    description: 'SigV4: the body not hashed into the canonical request',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: 'hmac(hmac(hmac(kDate, input.region), input.service)',
    replace: 'hmac(hmac(hmac(kDate, input.service), input.region)',
    description: 'SigV4: signing key derived with service and region swapped',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: ".replace(/\\.\\d{3}/, '')",
    replace: '',
    description: 'SigV4: x-amz-date keeps its milliseconds',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com'",
    replace: "'amazonaws.com'",
    description: "AWS: China regions' endpoints without the .cn suffix",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: 'data.expiresAt * 1000',
    replace: 'data.expiresAt',
    description: "AWS: ECR's expiresAt (seconds) read as milliseconds",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: '(await readNamedFile(deps, tokenFile, namedBy)).trim()',
    replace: 'await readNamedFile(deps, tokenFile, namedBy)',
    description: 'AWS: the web identity token file not trimmed',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "service: isPublic ? 'ecr-public' : 'ecr',",
    replace: "service: 'ecr',",
    description: 'AWS: ECR Public signed for the ecr service',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: 'expiresAt: deps.now() + expiresIn * 1000',
    replace: 'expiresAt: deps.now() + expiresIn',
    description: "Azure: Entra's expires_in read as milliseconds",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: 'expiresAt: expiresOn * 1000',
    replace: 'expiresAt: deps.now() + expiresOn * 1000',
    description: "Azure: managed identity's expires_on (epoch seconds) read as seconds from now",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: "scope: 'https://containerregistry.azure.cn/.default',",
    replace: "scope: 'https://containerregistry.azure.net/.default',",
    description: "Azure: China's registries asked for the public cloud's scope",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: "if (host.endsWith('.azurecr.us'))",
    replace: "if (host.endsWith('.azurecr.io'))",
    description: "Azure: the US Government cloud's authority for the wrong suffix",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: GCP,
    find: 'expiresAt: now + expiresIn * 1000',
    replace: 'expiresAt: now + expiresIn',
    description: "GCP: the token's expires_in read as milliseconds",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: GCP,
    find: 'const iat = Math.floor(deps.now() / 1000);',
    replace: 'const iat = deps.now();',
    description: "GCP: the JWT's iat in milliseconds",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: GCP,
    find: 'exp: iat + 3600 }',
    replace: 'exp: iat + 3601 }',
    description: 'GCP: a JWT living longer than the hour Google allows',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: PROVIDERS,
    find: '/^([0-9]+)\\.dkr',
    replace: '/([0-9]+)\\.dkr',
    description: 'hosts: the ECR pattern not anchored at the start',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: PROVIDERS,
    find: '(.+-docker\\.pkg\\.dev)',
    replace: '(.*docker\\.pkg\\.dev)',
    description: 'hosts: Artifact Registry without its LOCATION- prefix',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: PROVIDERS,
    find: 'azurecr\\.us)$/',
    replace: 'azurecr\\.us)/',
    description: 'hosts: the ACR pattern not anchored at the end',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: SIGV4,
    find: "input.url.pathname.split('/').map(uriEncode).join('/')",
    replace: 'input.url.pathname',
    description: 'SigV4: path segments not encoded again',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: 'section[kv[1]!.toLowerCase()] = kv[2]!;',
    replace: 'section[kv[1]!] = kv[2]!;',
    description: 'AWS shared files: keys not lower-cased',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;",
    replace: "if (line === '' || line.startsWith('#')) continue;",
    description: "AWS shared files: ';' comments read as settings",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: 'return { ...fromConfig, ...fromCredentials };',
    replace: 'return { ...fromCredentials, ...fromConfig };',
    description: 'AWS shared files: the config file over the credentials file',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "    ?.replaceAll('&lt;', '<')",
    replace: "    ?.replaceAll('&amp;', '&')\n    .replaceAll('&lt;', '<')",
    description: 'AWS: STS XML entities decoded twice (&amp; first)',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "  ).replace(/\\/$/, '');",
    replace: '  );',
    description: "AWS: the metadata endpoint's trailing slash kept",
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: 'token = t.text.trim();',
    replace: 'token = t.text;',
    description: 'AWS: the IMDSv2 session token not trimmed',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AWS,
    find: "roles.text.split('\\n')[0]?.trim()",
    replace: 'roles.text.trim()',
    description: 'AWS: every role listed by IMDS taken as one name',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: ".replace(/\\/?$/, '/');",
    replace: ';',
    description: 'Azure: AZURE_AUTHORITY_HOST without a trailing slash glued to the tenant',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: AZURE,
    find: '${encodeURIComponent(tenant)}/oauth2',
    replace: '${tenant}/oauth2',
    description: 'Azure: the tenant not encoded in the token URL',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: GCP,
    find: "/^https?:\\/\\//.test(host) ? host.replace(/\\/$/, '') : `http://${host}`",
    replace: '`http://${host}`',
    description: 'GCP: a GCE_METADATA_HOST given as a URL prefixed again',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: GCP,
    find: 'deps.env.CLOUDSDK_CONFIG ?? ',
    replace: '',
    description: 'GCP: CLOUDSDK_CONFIG ignored',
    tests: CLOUD_TESTS,
  },
  {
    area: 'cloud-auth',
    file: 'src/scan/registry/auth.ts',
    find: 'entry.renewAt = c.expiresAt - CREDENTIALS_RENEW_MS;',
    replace: 'entry.renewAt = c.expiresAt;',
    description: 'renewal: cloud credentials renewed when they expire, not five minutes before',
    tests: ['test/scan/cloud-registry.test.ts'],
  },
  {
    area: 'cloud-auth',
    file: 'src/scan/registry/auth.ts',
    find: 'this.ex.pool.now() < hit.renewAt',
    replace: 'this.ex.pool.now() <= hit.renewAt',
    description: 'renewal: off by one at the renewal time',
    tests: ['test/scan/cloud-registry.test.ts'],
  },
];

const KUSTOMIZE = 'src/config/kustomize.ts';
const KUSTOMIZE_TESTS = ['test/config/kustomize.test.ts'];

const kustomize: Mutation[] = [
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: '    })\n    .reverse();',
    replace: '    });',
    description: 'the first patch setting a field wins, not the last',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: 'identity(b.value)!.name.length - identity(a.value)!.name.length',
    replace: 'identity(a.value)!.name.length - identity(b.value)!.name.length',
    description: 'a prefixed/suffixed name mapped to the shortest contained name',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: 'resources.filter((d) => identity(d.value)?.kind === id.kind)',
    replace: 'resources.filter((d) => identity(d.value) !== undefined)',
    description: 'a resource of another kind taken as the source',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: '(pid.name === sourceName || pid.name === id.name)',
    replace: 'pid.name === id.name',
    description: "a patch naming the resource's original name ignored",
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: 'return pid?.kind === id.kind && (pid.name === sourceName || pid.name === id.name);',
    replace: 'return pid !== undefined && (pid.name === sourceName || pid.name === id.name);',
    description: 'a patch of another kind applied',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "    path[0] === 'kind' ||\n",
    replace: '',
    description: "a patch's kind line taken for the object's",
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "path[1] === 'name' || ",
    replace: '',
    description: "a patch's metadata.name line taken for the object's",
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "f.includes('=') ? f.slice(f.indexOf('=') + 1) : f",
    replace: 'f',
    description: 'generator files: key=path not split',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "f.slice(f.indexOf('=') + 1)",
    replace: "f.slice(f.indexOf('='))",
    description: 'generator files: key=path split one character early',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: '|\\?ref=/i',
    replace: '/i',
    description: 'a remote resource with ?ref= read as a local path',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: '|git@|',
    replace: '|',
    description: 'a git@ remote read as a local path',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: '.filter((p) => !/[\\n:{]/.test(p))',
    replace: '',
    description: 'an inline strategic-merge patch taken for a path',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "...paths('patchesJson6902'), ",
    replace: '',
    description: 'patchesJson6902 paths not read',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: "      generated.push(...strings(valueAt(g, ['envs'])));\n",
    replace: '',
    description: "a generator's envs not consumed",
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: 'if (st?.isDirectory()) await visit(r);',
    replace: 'if (st?.isDirectory()) out.consumed.push(r);',
    description: 'bases not followed',
    tests: KUSTOMIZE_TESTS,
  },
  {
    area: 'kustomize-positions',
    file: KUSTOMIZE,
    find: 'if (!source) return unmapped;',
    replace: 'if (!source) return { ...unmapped, line: 1 };',
    description: 'an unmapped object given a line of the kustomization',
    tests: KUSTOMIZE_TESTS,
  },
];

const FAST = 'src/git/fast-commit.ts';
const FAST_TESTS = ['test/git/fast-commit.test.ts', 'test/git/commit.test.ts'];

const fastCommit: Mutation[] = [
  // Letting a tracked symlink (120000) through the index check is no bug any more: the working
  // tree check below refuses every path that is not a regular file of the index's mode.
  {
    area: 'fast-commit',
    file: FAST,
    find: "if (!st?.isFile() || (st.mode & 0o100 ? '100755' : '100644') !== entry.mode) return undefined;",
    replace: '',
    description:
      'a file replaced by a symlink, or with a changed executable bit, committed as the index has it',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "(st.mode & 0o100 ? '100755' : '100644') !== entry.mode",
    replace: 'false',
    description: 'a changed executable bit not committed',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'update HEAD ${made} ${parent}\\n',
    replace: 'update HEAD ${made}\\n',
    description: 'HEAD moved without compare-and-swap over a HEAD someone else moved',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'changed.push({ path, mode: entry.mode, content })',
    replace: "changed.push({ path, mode: '100644', content })",
    description: 'the executable bit dropped',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "if (path === '.gitattributes' || path.endsWith('/.gitattributes')) return undefined;",
    replace: "if (path === '.gitattributes') return undefined;",
    description: 'a .gitattributes in a subdirectory ignored',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'if (!entry) return undefined;',
    replace: 'if (!entry) continue;',
    description: 'a file not tracked yet left out of the commit',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'if (blobId(content, entry.id.length) !== entry.id)',
    replace: 'if (content.length > 0)',
    description: 'unchanged files committed again (an empty commit when none changed)',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'Math.floor(c.date.getTime() / 1000)',
    replace: 'Math.round(c.date.getTime() / 1000)',
    description: 'the commit date rounded, not truncated, to the second',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: '  c === 0x2e || // .\n',
    replace: '',
    description: "a trailing '.' not trimmed from names and emails as git does",
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: 'byte < 0x20 || byte === 0x7f || byte >= 0x80',
    replace: 'byte < 0x20 || byte === 0x7f',
    description: 'non-ASCII path bytes not quoted for fast-import',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: '.map((f) => `${f.mode} ${blobId(f.content, parent.length)}',
    replace: '.filter(() => false)\n      .map((f) => `${f.mode} ${blobId(f.content, parent.length)}',
    description: 'the index not brought to the new commit',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "if (identPart(input.author.name) === '' || identPart(input.author.email) === '') return undefined;",
    replace: '',
    description: 'an author name git refuses committed anyway',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "if (identPart(input.committer.name) === '' || identPart(input.committer.email) === '') return undefined;",
    replace: '',
    description: 'a committer name git refuses committed anyway',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: ".replace(/[<>\\n]/g, '')",
    replace: '',
    description: "'<', '>' and newlines kept in names and emails",
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "hexLength === 64 ? 'sha256' : 'sha1'",
    replace: "'sha1'",
    description: 'blob ids of a SHA-256 repository computed with SHA-1',
    tests: FAST_TESTS,
  },
  {
    area: 'fast-commit',
    file: FAST,
    find: "else if (byte === 0x5c) out += '\\\\\\\\';",
    replace: '',
    description: 'a backslash in a path not escaped for fast-import',
    tests: FAST_TESTS,
  },
];

const APPLY = 'src/write/setters/apply.ts';
const APPLY_TESTS = ['test/write/setters.test.ts'];

const apply: Mutation[] = [
  {
    area: 'setters-write',
    file: APPLY,
    find: 'if (s > 0 && isLowSurrogate(after.charCodeAt(after.length - s))) s--;',
    replace: '',
    description: 'the common suffix may start inside a surrogate pair',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: 'if (p > 0 && isHighSurrogate(before.charCodeAt(p - 1))) p--;',
    replace: '',
    description: 'the common prefix may end inside a surrogate pair',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: "const at = Buffer.byteLength(before.slice(0, p), 'utf8');",
    replace: 'const at = p;',
    description: 'the write offset in characters, not bytes',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: '      if (newBytes < oldBytes) ftruncateSync(fd, newBytes);\n',
    replace: '',
    description: 'a shorter text not truncated',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: "        writeAllSync(fd, Buffer.from(before.slice(p), 'utf8'), at);\n",
    replace: '',
    description: 'a failed write not undone',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: '        ftruncateSync(fd, oldBytes);\n',
    replace: '',
    description: 'an undone write not cut back to the old length',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: 'fstatSync(fd).size !== oldBytes || ',
    replace: '',
    description: 'a file grown since it was read is written over',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: "!readAllSync(fd, oldBytes).equals(Buffer.from(before, 'utf8'))",
    replace: 'false',
    description: 'a file edited (same length) since it was read is written over',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: 'writes.filter((_, i) => written[i])',
    replace: 'writes',
    description: 'a file whose write failed listed as written',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: 'if (opts.dryRun || result.errors.length > 0) return result;',
    replace: 'if (opts.dryRun) return result;',
    description: 'files written although another failed to parse',
    tests: APPLY_TESTS,
  },
  {
    area: 'setters-write',
    file: APPLY,
    find: 'if (value !== marker.value) edits.push({ marker, value });',
    replace: 'edits.push({ marker, value });',
    description: 'a marker already at the value listed as a change',
    tests: APPLY_TESTS,
  },
];

const GIT_PASS_TESTS = ['test/git/repair.test.ts', 'test/git/workspace.test.ts', 'test/git/history.test.ts'];

/** The webhook pass's git processes cut in issue 27 (docs/git.md): each cut keeps its answer. */
const gitPass: Mutation[] = [
  {
    area: 'git-pass',
    file: 'src/git/repair.ts',
    find: 'return urls.length === 1 ? urls[0] : undefined;',
    replace: 'return urls.length >= 1 ? urls[0] : undefined;',
    description: "the workspace check takes origin's first URL where git takes the last",
    tests: GIT_PASS_TESTS,
  },
  {
    area: 'git-pass',
    file: 'src/git/repair.ts',
    find: "if (name === 'include' || name === 'includeif') return undefined;",
    replace: '',
    description: 'the workspace check ignores a config include that names another URL',
    tests: GIT_PASS_TESTS,
  },
  {
    area: 'git-pass',
    file: 'src/git/repair.ts',
    find: 'if (head === null || !objects?.isDirectory() || !refs?.isDirectory()) return null;',
    replace: 'if (head === null) return null;',
    description: 'a repository without refs/ or objects/ called whole',
    tests: GIT_PASS_TESTS,
  },
  {
    area: 'git-pass',
    file: 'src/git/workspace.ts',
    find: '      await this.resolveOrThrow(remote, `branch ${branch}`);\n      throw err;',
    replace: '      throw err;',
    description: 'a branch the remote lacks is a damaged checkout (re-cloned), not not-found',
    tests: GIT_PASS_TESTS,
  },
];

const KNOWN_TESTS = ['test/git/known.test.ts', 'test/run/pass-counts.test.ts'];

/** What a process knows of its own last commit (src/git/known.ts) must be what git would say. */
const knownCommit: Mutation[] = [
  {
    area: 'known-commit',
    file: 'src/git/known.ts',
    find: "return k && commit !== '' && k.commit === commit ? k : undefined;",
    replace: 'return k;',
    description: "another commit's facts taken for HEAD's (a person's newer commit answered from memory)",
    tests: KNOWN_TESTS,
  },
  {
    area: 'known-commit',
    file: FAST,
    find: 'previous: valueOnLine(l.before, l.setter)',
    replace: 'previous: valueOnLine(text, l.setter)',
    description: "pawl's own change remembered with the new value as the previous one",
    tests: KNOWN_TESTS,
  },
  {
    area: 'known-commit',
    file: 'src/git/known.ts',
    find: 'if (!title || block.length === 0) return null;',
    replace: 'if (block.length === 0) return null;',
    description: 'a message without a title read as trailers (git reads none there)',
    tests: KNOWN_TESTS,
  },
];

const WORKSPACE = 'src/git/workspace.ts';
const LEFT_CLEAN_TESTS = ['test/git/left-clean.test.ts'];

/** A checkout is skipped only for a workspace exactly as the last pass left it (src/git/known.ts). */
const leftClean: Mutation[] = [
  {
    area: 'left-clean',
    file: WORKSPACE,
    find: '      remote === left.commit &&\n',
    replace: '',
    description: "a remote that moved (a person's commit) taken for the commit the pass left",
    tests: LEFT_CLEAN_TESTS,
  },
  {
    area: 'left-clean',
    file: WORKSPACE,
    find: '    now !== null &&\n    now.ino === then.ino &&',
    replace: '    true ||',
    description: 'an index another git command rewrote taken for the one the pass left',
    tests: LEFT_CLEAN_TESTS,
  },
  {
    area: 'left-clean',
    file: 'src/git/known.ts',
    find: '  leftClean.delete(dir);\n  return left;',
    replace: '  return left;',
    description: 'the fact kept past the checkout that took it (a failed pass after it trusted)',
    tests: LEFT_CLEAN_TESTS,
  },
  {
    area: 'left-clean',
    file: WORKSPACE,
    find: 'const knownWhole = peekLeftClean(dir)?.url === url;',
    replace: 'const knownWhole = peekLeftClean(dir) !== undefined;',
    description: 'a workspace left clean for another URL taken as whole for this one',
    tests: LEFT_CLEAN_TESTS,
  },
  {
    area: 'left-clean',
    file: WORKSPACE,
    find: '      takeLeftClean(dir);\n      if (isTransient(err)) throw err;',
    replace: '      if (isTransient(err)) throw err;',
    description: 'a failed fetch leaves the workspace known whole (what it may have left is not repaired)',
    tests: LEFT_CLEAN_TESTS,
  },
];

const CARRIED_TESTS = ['test/store/result.test.ts'];

/** A carried row is found by a hash of its key and taken only when it is equal (src/store/carry.ts, result.ts). */
const carriedHash: Mutation[] = [
  {
    area: 'carried-hash',
    file: 'src/store/carry.ts',
    find: 'p > last && same(base.decisions[p]!, d)',
    replace: 'p > last',
    description: "a decision carried from the base's row its hash found, unequal",
    tests: CARRIED_TESTS,
  },
  {
    area: 'carried-hash',
    file: 'src/store/result.ts',
    find: 'p > last && sameAt(base, p, e)',
    replace: 'p > last',
    description: "a result's entry carried from the base's entry its name's hash found, unequal",
    tests: CARRIED_TESTS,
  },
  {
    area: 'carried-hash',
    file: 'src/store/carry.ts',
    find: 'this.#baseResults.set(baseId, new WeakRef(result));',
    replace: 'this.#baseResults.set(baseId, { deref: () => result } as WeakRef<object>);',
    description: "a base's result held for as long as the reader lives",
    tests: CARRIED_TESTS,
  },
];

const SHARED_ROWS_TESTS = ['test/run/shared-rows.test.ts', 'test/store/result.test.ts'];

/** A daemon's unchanged rows are shared and hashed once; anything else is hashed each time (src/run/shared-rows.ts). */
const sharedRows: Mutation[] = [
  {
    area: 'shared-rows',
    file: 'src/store/result.ts',
    find: "const frozen = typeof e === 'object' && e !== null && Object.isFrozen(e);",
    replace: "const frozen = typeof e === 'object' && e !== null;",
    description: 'an entry that can change keeps the digest of what it was',
    tests: SHARED_ROWS_TESTS,
  },
  {
    area: 'shared-rows',
    file: 'src/run/shared-rows.ts',
    find: '      was.highWater === (o.ratchet?.highWater ?? null) &&\n',
    replace: '',
    description: "a policy's new high-water mark reported with the last pass's row",
    tests: SHARED_ROWS_TESTS,
  },
  {
    area: 'shared-rows',
    file: 'src/run/shared-rows.ts',
    find: 'was.error === error && was.errorAt === errorAt',
    replace: 'was.error === error',
    description: "a repository's stored error reported with when the last one was said",
    tests: SHARED_ROWS_TESTS,
  },
  {
    area: 'shared-rows',
    file: 'src/run/shared-rows.ts',
    find: '  const kept = deepFreeze(row);',
    replace: '  const kept = row;',
    description: 'a shared row left mutable',
    tests: SHARED_ROWS_TESTS,
  },
  {
    area: 'shared-rows',
    file: 'src/run/markers.ts',
    find: 'kept !== undefined && kept.ns === ns && kept.policies === policies',
    replace: 'kept !== undefined && kept.policies === policies',
    description: "a file's mistakes as another namespace's automation found them",
    tests: ['test/run/marker-mistakes.test.ts'],
  },
];

const LATEST_TESTS = ['test/store/sqlite.test.ts', 'test/store/latest.test.ts'];

/** The latest scans kept between reads follow every change of them (src/store/latest.ts). */
const latestScans: Mutation[] = [
  {
    area: 'latest-scans',
    file: 'src/store/sqlite/store.ts',
    find: 'const { repository, image } = row;\n      this.#latest.forget(repository);',
    replace: 'const { repository, image } = row;',
    description: 'a finished scan leaves the latest scans kept as they were',
    tests: LATEST_TESTS,
  },
  {
    area: 'latest-scans',
    file: 'src/store/sqlite/store.ts',
    find: '    for (const repository of swept) this.#latest.forget(repository);',
    replace: '',
    description: 'dead scans marked interrupted by a sweep leave the latest scans kept as they were',
    tests: LATEST_TESTS,
  },
  {
    area: 'latest-scans',
    file: 'src/store/sqlite/store.ts',
    find: '`${version} ${this.#groups.failures()}`',
    replace: '`${this.#groups.failures()}`',
    description: "another connection's commit leaves the latest scans kept",
    tests: LATEST_TESTS,
  },
  {
    area: 'latest-scans',
    file: 'src/store/latest.ts',
    find: 'if (stamp !== this.#stamp) {',
    replace: 'if (stamp === undefined) {',
    description: 'a new stamp leaves the latest scans kept',
    tests: LATEST_TESTS,
  },
];

const HEADS_TESTS = ['test/store/sqlite.test.ts'];

/** Each repository's newest scans and each policy's newest selection, and their histories, without an index keyed by either (src/store/schema.ts). */
const scanHeads: Mutation[] = [
  {
    area: 'scan-heads',
    file: 'src/store/sqlite/migrations.ts',
    find: "good_id = CASE WHEN NEW.outcome = 'ok' THEN max(coalesce(good_id, 0), NEW.id) ELSE good_id END",
    replace: 'good_id = max(coalesce(good_id, 0), NEW.id)',
    description: "a failed scan becomes the image's newest good one",
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-heads',
    file: 'src/store/sqlite/sql.ts',
    find: 'VALUES (?, ?, ?, (SELECT max(last_id) FROM scan_heads WHERE repository = ?))',
    replace: 'VALUES (?, ?, ?, (SELECT max(last_id) FROM scan_heads WHERE repository = ? AND false))',
    description: 'a scan begins with no link to the one before it',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-heads',
    file: 'src/store/sqlite/sql.ts',
    find: "WHERE NOT (s.outcome = 'ok' AND s.image = @image))",
    replace: 'WHERE NOT (s.image = @image))',
    description: 'a scan overtaken by a later one is compared with a failed scan before it',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-heads',
    file: 'src/store/schema.ts',
    find: 'lag(id) OVER (PARTITION BY ${key} ORDER BY id)',
    replace: 'lag(id) OVER (ORDER BY id)',
    description: "an older store's histories filled across repositories and policies",
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-heads',
    file: 'src/store/sqlite/sql.ts',
    find: 'ON CONFLICT (policy) DO UPDATE SET last_id = excluded.last_id`,',
    replace: 'ON CONFLICT (policy) DO NOTHING`,',
    description: "a policy's newest selection stays its first",
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-heads',
    file: 'src/store/sqlite/sql.ts',
    find: 'VALUES (?, ?, ?, ?, ?, (SELECT last_id FROM selection_heads WHERE policy = ?))',
    replace: 'VALUES (?, ?, ?, ?, ?, (SELECT last_id FROM selection_heads WHERE policy = ? AND false))',
    description: "a policy's selections not linked: its history is its newest one",
    tests: HEADS_TESTS,
  },
];

/** A one-shot run carries from the newest base of its automations in the store (src/store/carry.ts). */
const storedBases: Mutation[] = [
  {
    area: 'stored-bases',
    file: 'src/store/carry.ts',
    find: 'if (this.#bases.has(lineage) || this.#looked.has(lineage)) return null;',
    replace: 'if (this.#bases.has(lineage) || this.#looked.has(lineage) || lineage !== null) return null;',
    description: "a one-shot run never looks for its automations' base in the store",
    tests: HEADS_TESTS,
  },
  {
    area: 'stored-bases',
    file: 'src/store/carry.ts',
    find: 'if (lineageOfNames(await src.automations(id)) !== lineage) continue;',
    replace: '',
    description: 'a base of other automations is carried from',
    tests: HEADS_TESTS,
  },
  {
    area: 'stored-bases',
    file: 'src/store/carry.ts',
    find: 'if (rows.length !== row.decisions_count) continue;',
    replace: '',
    description: 'a base whose rows do not add up is carried from',
    tests: HEADS_TESTS,
  },
  {
    area: 'stored-bases',
    file: 'src/store/sqlite/sql.ts',
    find: 'WHERE decisions_count IS NOT NULL ORDER BY base DESC LIMIT 8`,',
    replace: 'WHERE decisions_count IS NOT NULL ORDER BY base LIMIT 8`,',
    description: 'the oldest base in the store is carried from',
    tests: HEADS_TESTS,
  },
  {
    area: 'stored-bases',
    file: 'src/store/carry.ts',
    find: '      if (err instanceof RuntimeError) continue;\n',
    replace: '',
    description: "a base whose result does not add up fails the run's write",
    tests: HEADS_TESTS,
  },
];

/** A rescan's statements on SQLite: the stale-scan sweep and the raw responses' pruning, once a group. */
const scanStatements: Mutation[] = [
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/store.ts',
    find: 'if (last !== null && now >= last && now - last < STALE_SWEEP_MS) return;',
    replace: 'if (last !== null) return;',
    description: 'stale running scans are marked only at the first scan a store begins',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/store.ts',
    find: 'if (last !== null && now >= last && now - last < STALE_SWEEP_MS) return;',
    replace: '',
    description: 'every scan begun sweeps every repository',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/store.ts',
    find: '    for (const repository of swept) this.#latest.forget(repository);\n',
    replace: '',
    description: 'a repository whose dead scan was marked keeps its latest scans as read before',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/store.ts',
    find: '        if (this.#rawWritten.size === 0) this.#groups.beforeCommit(this.#pruneRaw);\n',
    replace: '',
    description: 'old raw responses are never pruned on commit',
    tests: HEADS_TESTS,
  },
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/store.ts',
    find: '    if (this.#rawWritten.size > 0) this.#groups.write(this.#pruneRaw);\n',
    replace: '',
    description: 'raw responses read before the group commits are not pruned yet',
    tests: ['test/store/sqlite.test.ts'],
  },
  {
    area: 'scan-statements',
    file: 'src/store/sqlite/group.ts',
    find: '        this.#savepoint(fn);\n      } catch (err) {',
    replace: '        fn();\n      } catch (err) {',
    description: 'a failing housekeeping write is not undone: its first rows commit with the group',
    tests: HEADS_TESTS,
  },
  {
    area: 'kept-outcomes',
    file: 'src/run/pass.ts',
    find: '        if (kept.error) log.info(',
    replace: '        book.forRepository(repoKey);\n        if (kept.error) log.info(',
    description: "a daemon's pass makes the facts of every kept outcome's repository, asked about or not",
    tests: ['test/run/pass-counts.test.ts'],
  },
  {
    area: 'kept-outcomes',
    file: 'src/run/outcome-cache.ts',
    find: '  events: Object.freeze([]),\n',
    replace: '  events: [],\n',
    description: 'a pass could add events to the record every later pass takes from a kept outcome',
    tests: ['test/run/outcome-cache.test.ts'],
  },
  {
    area: 'kept-outcomes',
    file: 'src/run/outcome-cache.ts',
    find: '      e.outcome = { ...e.outcome, policy };\n',
    replace: '',
    description: 'after a reload, a kept outcome still names the policy object of the configuration before',
    tests: ['test/run/outcome-cache.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/util/strings.ts',
    find: 'export function nameKey(namespace: string, name: string): string {\n',
    replace:
      'export function nameKey(namespace: string, name: string): string {\n  if (namespace) return `${namespace}/${name}`;\n',
    description: 'every ask for a name makes a key of its own, and every layer keeps its own copy',
    tests: ['test/util/strings.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/run/plan.ts',
    find: '{ ...p.outcome, candidate: older, verdicts: new SmallMap() }',
    replace: '{ ...p.outcome, candidate: older }',
    description: "the older tag's verdict is kept in the outcome's map and answers for the held candidate",
    tests: ['test/guard/gates.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/store/carry.ts',
    find: '      lists: this.#shared(keptLists(batch.finishRun!.result)),',
    replace: '      lists: keptLists(batch.finishRun!.result),',
    description: "each automation's base keeps its own digests of the same lists",
    tests: ['test/store/result.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/serve/source/configuration.ts',
    find: '    if (same !== undefined) dependents.set(r, same);',
    replace: '    if (same !== undefined && r === "") dependents.set(r, same);',
    description: 'repositories used by the same automations each keep their own list of them',
    tests: ['test/serve/configuration.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/config/schema/imagepolicy.ts',
    find: '(isDefaultGuard(g) ? SHARED_DEFAULT_GUARD : g)',
    replace: 'g',
    description: 'every policy with the default guard keeps a guard object of its own',
    tests: ['test/config/load.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/util/small-map.ts',
    find: '    else if (!this.#has || same(key, this.#key)) {',
    replace: '    else if (true) {',
    description:
      "a small map's second key replaces its first (a file's second known line, a policy's second verdict)",
    tests: ['test/git/known.test.ts', 'test/util/small-map.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/util/strings.ts',
    find: '  return copy === s ? copy : s;',
    replace: '  return /[\\ud800-\\udfff]/.test(s) ? s : copy;',
    description: 'a slice with a surrogate pair is not copied, and keeps its whole text',
    tests: ['test/util/strings.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/store/current.ts',
    find: "tags.some((t) => t.includes('\\n')) ? tags.join('\\n') : tags;",
    replace: "tags.some((t) => t.includes('\\n')) ? tags : tags;",
    description: 'the current tags kept as an array and a string a tag',
    tests: ['test/store/current.test.ts'],
  },
  {
    area: 'heap-at-rest',
    file: 'src/store/current.ts',
    find: 'tags.length > 0 && !tags.some(',
    replace: 'tags.length >= 0 && !tags.some(',
    description: 'an empty list of current tags read back as one empty tag',
    tests: ['test/store/current.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/serve/jobs/repository.ts',
    find: '        if (--left === 0) resolve();',
    replace: '        if (--left <= 1) resolve();',
    description: "a pass goes on before the last of its repositories' scans has ended",
    tests: ['test/serve/jobs.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/util/pool.ts',
    find: '    if (next) next();\n    else this.#free++;',
    replace: '    this.#free++;\n    if (next) next();',
    description: 'a slot freed for a waiting call is also counted free: more calls in flight than slots',
    tests: ['test/util/slots.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/util/pool.ts',
    find: '          running = Promise.reject(err as Error);',
    replace: '          throw err;',
    description: 'a call that throws at once keeps its slot, and the calls behind it never start',
    tests: ['test/util/slots.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/serve/scheduler.ts',
    find: '    if (run && !run.begun) {',
    replace: '    if (run && false) {',
    description: 'a request while the run waits at its gate asks for one more run after it',
    tests: ['test/serve/scheduler.test.ts', 'test/serve/jobs.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/serve/scheduler.ts',
    find: '  if (w.length < 16) return w.concat(add);',
    replace: '  if (w.length < 0) return w.concat(add);',
    description: "a run's waiters an array pushed to, with room for ~20 of them",
    tests: ['test/serve/scheduler.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/serve/scheduler.ts',
    find: '      (err: unknown) => end(errorMessage(err)),',
    replace: '      () => end(null),',
    description: 'a failed run is settled as a success',
    tests: ['test/serve/scheduler.test.ts'],
  },
  {
    area: 'waits',
    file: 'src/serve/series.ts',
    find: '      if (size >= PIECE) {',
    replace: '      if (size < 0) {',
    description: "a family's text is one string of every series",
    tests: ['test/serve/series.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/run/pass.ts',
    find: '    for (const r of due) latest.set(refKey(r.metadata), NO_SCANS);',
    replace: '',
    description: 'a pass holds the latest scans it read of the repositories it waits on',
    tests: ['test/run/pass-memory.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/run/policies.ts',
    find: '    this.tags = null;\n  }',
    replace: '  }',
    description: "a pass's book holds every repository's tags after its evaluations",
    tests: ['test/run/facts-book.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/run/secret-prints.ts',
    find: '    const done = this.#queue.then(fn);',
    replace: '    const done = fn();',
    description: "passes read and write the Secrets' prints at once, each over the other",
    tests: ['test/run/secret-prints.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/util/sorted-table.ts',
    find: '  return SortedTable.ifSorted(keys, vals) ?? new Map(',
    replace: '  return new Map(',
    description: "a pass's latest scans of 10,000 repositories a hash table of them",
    tests: ['test/store/sqlite.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/serve/series.ts',
    find: '    if (this.#readers > 0) {',
    replace: '    if (false) {',
    description: 'a series removed and added again during a scrape is written twice by it',
    tests: ['test/serve/series.test.ts'],
  },
  {
    area: 'in-flight',
    file: 'src/notify/derive.ts',
    find: '    scans: new Map(previous.scans),',
    replace: '    scans: previous.scans as Map<string, ScanMemory>,',
    description: 'eventsFrom changes the memory it was given',
    tests: ['test/notify/derive.test.ts'],
  },
];

const PINS = 'src/guard/pins.ts';
const PIN_TESTS = ['test/guard/pins.test.ts'];

/** A person's rollback holds until a newer release or `pawl release` (SPEC §4, docs/guard.md). */
const pins: Mutation[] = [
  {
    area: 'pins',
    file: PINS,
    find: 'return Math.floor(firstSeen.getTime() / 1000) > Math.floor(pinned.getTime() / 1000);',
    replace: 'return firstSeen.getTime() > pinned.getTime();',
    description: "a tag first seen in the pin's second, before it, lifts the rollback made after it",
    tests: PIN_TESTS,
  },
  {
    area: 'pins',
    file: PINS,
    find: '    !input.candidateInitial &&\n',
    replace: '',
    description: 'tags of the first scan of an empty state lift pins (deleting the state undoes rollbacks)',
    tests: PIN_TESTS,
  },
  {
    area: 'pins',
    file: PINS,
    find: 'const rollback = policy !== null && isRollbackOf(h.trailers, policy);',
    replace: 'const rollback = false;',
    description: 'a pawl rollback between values that cannot be ordered is not a pin',
    tests: PIN_TESTS,
  },
];

export const MUTATIONS: Mutation[] = [
  ...cloud,
  ...kustomize,
  ...fastCommit,
  ...knownCommit,
  ...leftClean,
  ...carriedHash,
  ...sharedRows,
  ...latestScans,
  ...scanHeads,
  ...storedBases,
  ...scanStatements,
  ...pins,
  ...apply,
  ...gitPass,
  ...SERVE_MUTATIONS,
];
