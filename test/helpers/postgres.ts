/**
 * Starts a real PostgreSQL server (Debian's `postgresql` package) for tests: a fresh cluster made by
 * `initdb` in a temp dir, listening on 127.0.0.1 on a free port, stopped and removed by `close()`.
 * When the tests run as root (CI does), the server runs as the `postgres` user, as PostgreSQL
 * requires. The cluster trades durability for speed (fsync off): it is thrown away after the test.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './registry.js';

const exec = promisify(execFile);

export interface TestPostgres {
  /** `postgres://pawl:PASSWORD@127.0.0.1:PORT/pawl`: a database owned by a password-authenticated role. */
  url: string;
  /** The same URL without the password (what a user would put on a command line). */
  urlWithoutPassword: string;
  password: string;
  host: string;
  port: number;
  database: string;
  user: string;
  dataDir: string;
  /** A fresh database owned by the test role; returns its URL (with the password). */
  createDatabase(name: string): Promise<string>;
  /** `pg_ctl stop -m fast`: the server goes away; `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: like a crash, no clean shutdown. */
  crash(): Promise<void>;
  /** Stops the server and removes its files. */
  close(): Promise<void>;
}

/** The directory holding `initdb`, `pg_ctl` and `psql`: `PAWL_PG_BIN`, else Debian's newest. */
export function postgresBinDir(): string | null {
  const fromEnv = process.env.PAWL_PG_BIN;
  if (fromEnv) return existsSync(join(fromEnv, 'initdb')) ? fromEnv : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function postgresUnavailable(): string | null {
  if (!postgresBinDir()) return 'PostgreSQL is not installed (scripts/install-deps.sh installs it)';
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) {
    return 'running as root, but there is no postgres user to run the server as';
  }
  return null;
}

function asServerUser(bin: string, args: string[]): [string, string[]] {
  // PostgreSQL refuses to run as root; Debian's package creates the postgres user.
  if (process.getuid?.() === 0) return ['runuser', ['-u', 'postgres', '--', bin, ...args]];
  return [bin, args];
}

async function run(bin: string, args: string[], cwd: string): Promise<string> {
  const [cmd, argv] = asServerUser(bin, args);
  try {
    const { stdout } = await exec(cmd, argv, { cwd, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${[cmd, ...argv].join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
  }
}

export async function startPostgres(): Promise<TestPostgres> {
  const binDir = postgresBinDir();
  if (!binDir) throw new Error(postgresUnavailable() ?? 'PostgreSQL is not installed');
  const root = await mkdtemp(join(tmpdir(), 'pawl-pg-'));
  const dataDir = join(root, 'data');
  const superPw = 'super-' + Math.random().toString(36).slice(2);
  const password = 'pawl-' + Math.random().toString(36).slice(2);
  const pwFile = join(root, 'pwfile');
  await writeFile(pwFile, superPw + '\n');
  if (process.getuid?.() === 0) {
    const { stdout } = await exec('id', ['-u', 'postgres']);
    const { stdout: gid } = await exec('id', ['-g', 'postgres']);
    await chown(root, Number(stdout.trim()), Number(gid.trim()));
    await chown(pwFile, Number(stdout.trim()), Number(gid.trim()));
  }
  await chmod(root, 0o700);
  await run(
    join(binDir, 'initdb'),
    [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--pwfile',
      pwFile,
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ],
    root,
  );
  const port = await freePort();
  const opts = [
    `-p ${port}`,
    `-k ${dataDir}`,
    `-c listen_addresses=127.0.0.1`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
    '-c shared_buffers=32MB',
  ].join(' ');
  const pgCtl = join(binDir, 'pg_ctl');
  const start = async (): Promise<void> => {
    await run(
      pgCtl,
      ['-D', dataDir, '-o', opts, '-l', join(root, 'server.log'), '-w', '-t', '60', 'start'],
      root,
    );
  };
  const stopWith = async (mode: 'fast' | 'immediate'): Promise<void> => {
    await run(pgCtl, ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'], root);
  };
  await start();
  const psql = async (sql: string): Promise<void> => {
    await run(
      join(binDir, 'psql'),
      [
        '-h',
        dataDir,
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        'postgres',
        '-v',
        'ON_ERROR_STOP=1',
        '-qc',
        sql,
      ],
      root,
    );
  };
  const user = 'pawl';
  await psql(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`);
  await psql(`CREATE DATABASE pawl OWNER ${user}`);
  const host = '127.0.0.1';
  const urlFor = (db: string, withPassword = true): string =>
    `postgres://${user}${withPassword ? ':' + password : ''}@${host}:${port}/${db}`;
  let running = true;
  return {
    url: urlFor('pawl'),
    urlWithoutPassword: urlFor('pawl', false),
    password,
    host,
    port,
    database: 'pawl',
    user,
    dataDir,
    async createDatabase(name: string): Promise<string> {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      await psql(`CREATE DATABASE ${name} OWNER ${user}`);
      return urlFor(name);
    },
    async stop(): Promise<void> {
      await stopWith('fast');
      running = false;
    },
    async start(): Promise<void> {
      await start();
      running = true;
    },
    async crash(): Promise<void> {
      await stopWith('immediate');
      running = false;
    },
    async close(): Promise<void> {
      if (running) await stopWith('immediate').catch(() => undefined);
      running = false;
      await rm(root, { recursive: true, force: true });
    },
  };
}
