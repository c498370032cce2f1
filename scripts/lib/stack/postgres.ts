/**
 * The stack's PostgreSQL: the distribution's server binaries on a data directory of the stack's own, listening on
 * 127.0.0.1 only, with the superuser and password compose's postgres image makes (POSTGRES_USER, POSTGRES_PASSWORD).
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnDetached, type ProcessRecord } from './processes';

/** Same defaults as docker-compose.yml's `postgresql` service. */
export const POSTGRES_USER = 'temporal';
export const POSTGRES_PASSWORD = 'temporal';

export interface PostgresLayout {
  /** Owned by the user PostgreSQL runs as. */
  root: string;
  data: string;
  sockets: string;
  log: string;
  initLog: string;
  port: number;
}

/** `$PG_BIN`, else the newest `/usr/lib/postgresql/<major>/bin` that has `postgres`. */
export function postgresBinDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PG_BIN) return env.PG_BIN;
  const base = '/usr/lib/postgresql';
  const majors = existsSync(base) ? readdirSync(base).filter((d) => existsSync(path.join(base, d, 'bin', 'postgres'))) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`PostgreSQL server binaries not found in ${base}/<version>/bin (apt-get install postgresql-15, or set PG_BIN)`);
  return path.join(base, newest, 'bin');
}

/** The user to run PostgreSQL as: this one, unless it is root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root, and there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses root)');
  }
}

/** Creates the data directory with `initdb` the first time; later calls keep the data. */
export function initPostgres(l: PostgresLayout, bin: string): void {
  if (existsSync(path.join(l.data, 'PG_VERSION'))) return;
  const user = runAs();
  for (const dir of [l.root, l.sockets]) mkdirSync(dir, { recursive: true });
  rmSync(l.data, { recursive: true, force: true });
  const pwfile = path.join(l.root, '.pwfile');
  writeFileSync(pwfile, `${POSTGRES_PASSWORD}\n`, { mode: 0o600 });
  if (user) for (const p of [l.root, l.sockets, pwfile]) chownSync(p, user.uid, user.gid);
  chmodSync(l.root, 0o700);
  try {
    const args = ['-D', l.data, '-U', POSTGRES_USER, `--pwfile=${pwfile}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C'];
    const result = spawnSync(path.join(bin, 'initdb'), args, { encoding: 'utf8', cwd: os.tmpdir(), ...(user ?? {}) });
    writeFileSync(l.initLog, `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`);
    if (result.status !== 0) throw new Error(`initdb of ${l.data} failed (exit ${result.status}); log: ${l.initLog}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** Starts the postmaster; ready once `isPostgresReady` says so. */
export function startPostgres(l: PostgresLayout, bin: string): ProcessRecord {
  const args = ['-D', l.data, '-p', String(l.port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${l.sockets}`];
  const pid = spawnDetached(path.join(bin, 'postgres'), args, { cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '', LANG: 'C' }, logFile: l.log, user: runAs() });
  return { pid, marker: 'postgres', log: l.log, ports: [l.port], startedAt: new Date().toISOString() };
}

/** Accepts connections over TCP (what the Temporal Server uses). */
export function isPostgresReady(l: PostgresLayout, bin: string): boolean {
  const result = spawnSync(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(l.port), '-U', POSTGRES_USER, '-t', '2'], { encoding: 'utf8' });
  return result.status === 0;
}

export type PostgresStopMode = 'smart' | 'fast' | 'immediate';

/** `pg_ctl stop -m mode`: fast (the default) ends sessions and checkpoints; immediate is a crash stop. */
export function stopPostgres(l: PostgresLayout, bin: string, mode: PostgresStopMode = 'fast'): void {
  if (!existsSync(path.join(l.data, 'postmaster.pid'))) return;
  const result = spawnSync(path.join(bin, 'pg_ctl'), ['stop', '-D', l.data, '-m', mode, '-w', '-t', '60'], { encoding: 'utf8', cwd: os.tmpdir(), ...(runAs() ?? {}) });
  if (result.status !== 0 && !/Is server running\?/.test(result.stderr ?? '')) {
    throw new Error(`pg_ctl stop -m ${mode} failed (exit ${result.status}): ${(result.stderr ?? '').trim()}`);
  }
}
