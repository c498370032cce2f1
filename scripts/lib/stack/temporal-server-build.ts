/**
 * The Temporal Server and its SQL schema tool for `npm run stack`, built from the Go module `go.temporal.io/server`
 * (the module proxy is reachable here; GitHub releases and temporal.download are not). Built once per machine into
 * a cache outside the clone, with the server's own config template (the one the temporalio/server image renders) and
 * its PostgreSQL schemas copied beside the binaries, so the Go module cache can be cleaned without breaking the stack.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectCacheDir } from '../cache-dir';
import { acquireLock } from '../lock';

/** Keep docker-compose.yml's temporalio/server and temporalio/admin-tools tags at this version. */
export const TEMPORAL_SERVER_VERSION = '1.32.2';
/** The server needs Go >= 1.26.10; GOTOOLCHAIN makes any local Go fetch this one from the module proxy. */
export const GO_TOOLCHAIN = 'go1.27.3';
const MODULE = 'go.temporal.io/server';
const PACKAGES = { server: `${MODULE}/cmd/server`, sqlTool: `${MODULE}/cmd/tools/sql` };
/** Changes with anything that changes the binaries, so a stamp written for another recipe is rebuilt. */
const RECIPE = `${MODULE}@v${TEMPORAL_SERVER_VERSION} ${GO_TOOLCHAIN} ${os.platform()}/${os.arch()}`;
const LOCK_WAIT_MS = 30 * 60_000;
const BUILD_TIMEOUT_MS = 25 * 60_000;

export interface TemporalServerPaths {
  serverPath: string;
  sqlToolPath: string;
  /** The server's config template (`# enable-template`, rendered by the server from its environment). */
  configTemplate: string;
  /** `schema/postgresql/v12` of the module: `temporal/` and `visibility/`, each with `versioned/`. */
  postgresSchemaDir: string;
  version: string;
}

export type TemporalBuildStep = 'go' | 'resolve' | 'build' | 'copy' | 'verify';

/** A build step that failed; `logFile` holds the full output of the command it ran. */
export class TemporalBuildError extends Error {
  override name = 'TemporalBuildError';
  constructor(
    readonly step: TemporalBuildStep,
    detail: string,
    readonly logFile?: string,
    what = 'temporal server build',
  ) {
    super(`${what}: ${step} failed: ${detail}${logFile ? `\n  full log: ${logFile}` : ''}`);
  }
}

/** `$AGENT_TEMPORAL_SERVER_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/durable-agent-worker/temporal-server/<version>`. */
export function temporalServerCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENT_TEMPORAL_SERVER_CACHE) return path.resolve(env.AGENT_TEMPORAL_SERVER_CACHE, TEMPORAL_SERVER_VERSION);
  return projectCacheDir(env, 'temporal-server', TEMPORAL_SERVER_VERSION);
}

function layout(cache: string) {
  return {
    cache,
    module: path.join(cache, 'build'),
    logs: path.join(cache, 'logs'),
    stamp: path.join(cache, 'ready.json'),
    lock: path.join(cache, '.lock'),
    paths: {
      serverPath: path.join(cache, 'bin', 'temporal-server'),
      sqlToolPath: path.join(cache, 'bin', 'temporal-sql-tool'),
      configTemplate: path.join(cache, 'config', 'docker.yaml'),
      postgresSchemaDir: path.join(cache, 'schema', 'postgresql', 'v12'),
      version: TEMPORAL_SERVER_VERSION,
    } satisfies TemporalServerPaths,
  };
}

export interface EnsureTemporalServerOptions {
  /** Progress lines (one per step that has work to do). @default console.error */
  log?: (line: string) => void;
}

/**
 * Returns the paths of a working Temporal Server of TEMPORAL_SERVER_VERSION, building whatever the cache lacks
 * (about 4 minutes on 2 cores the first time). Idempotent; concurrent callers wait on a lock.
 */
export async function ensureTemporalServer(options: EnsureTemporalServerOptions = {}): Promise<TemporalServerPaths> {
  const log = options.log ?? ((line: string) => console.error(line));
  const l = layout(temporalServerCacheDir());
  if (isReady(l)) return l.paths;
  mkdirSync(l.logs, { recursive: true });
  const release = await acquireLock(l.lock, 'temporal server build', LOCK_WAIT_MS, log);
  try {
    if (isReady(l)) return l.paths;
    const started = Date.now();
    const env = { ...process.env, GOTOOLCHAIN: GO_TOOLCHAIN, GOFLAGS: '-mod=mod' };
    run('go', ['version'], { cwd: os.tmpdir(), env, step: 'go', logFile: path.join(l.logs, 'go-version.log') });
    mkdirSync(l.module, { recursive: true });
    if (!existsSync(path.join(l.module, 'go.mod'))) {
      writeFileSync(path.join(l.module, 'go.mod'), 'module durable-agent-worker/temporal-server-build\n\ngo 1.26\n');
    }
    log(`temporal server build: resolving ${MODULE}@v${TEMPORAL_SERVER_VERSION} with ${GO_TOOLCHAIN} (log: ${path.join(l.logs, 'resolve.log')})`);
    run('go', ['get', ...Object.values(PACKAGES).map((pkg) => `${pkg}@v${TEMPORAL_SERVER_VERSION}`)], { cwd: l.module, env, step: 'resolve', logFile: path.join(l.logs, 'resolve.log') });
    mkdirSync(path.dirname(l.paths.serverPath), { recursive: true });
    for (const [pkg, out] of [[PACKAGES.server, l.paths.serverPath], [PACKAGES.sqlTool, l.paths.sqlToolPath]] as const) {
      const logFile = path.join(l.logs, `build-${path.basename(out)}.log`);
      const hint = pkg === PACKAGES.server ? 'takes 3 to 12 minutes on 2 cores the first time; ' : '';
      log(`temporal server build: go build ${pkg} (${hint}log: ${logFile})`);
      // Built beside the target and renamed, so a half-written binary never passes for a built one.
      run('go', ['build', '-o', `${out}.part`, pkg], { cwd: l.module, env, step: 'build', logFile });
      renameSync(`${out}.part`, out);
    }
    copyModuleFiles(l, env);
    const version = serverVersion(l.paths.serverPath);
    if (!version?.includes(TEMPORAL_SERVER_VERSION)) {
      throw new TemporalBuildError('verify', `${l.paths.serverPath} --version printed "${version ?? '(nothing)'}", expected ${TEMPORAL_SERVER_VERSION}`);
    }
    writeFileSync(l.stamp, JSON.stringify({ recipe: RECIPE, ...l.paths, builtInSeconds: Math.round((Date.now() - started) / 1000), at: new Date().toISOString() }, null, 2));
    log(`temporal server build: ${version} ready in ${Math.round((Date.now() - started) / 1000)} s, cached in ${l.cache}`);
    return l.paths;
  } finally {
    release();
  }
}

/** Built with this recipe, everything in place, and the binary still runs (a cache can move between machines). */
function isReady(l: ReturnType<typeof layout>): boolean {
  let stamp: { recipe?: string } | undefined;
  try {
    stamp = JSON.parse(readFileSync(l.stamp, 'utf8')) as { recipe?: string };
  } catch {
    return false;
  }
  const { serverPath, sqlToolPath, configTemplate, postgresSchemaDir } = l.paths;
  if (stamp.recipe !== RECIPE || ![serverPath, sqlToolPath, configTemplate, postgresSchemaDir].every((p) => existsSync(p))) return false;
  return serverVersion(serverPath)?.includes(TEMPORAL_SERVER_VERSION) ?? false;
}

function serverVersion(serverPath: string): string | undefined {
  const result = spawnSync(serverPath, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  return result.status === 0 ? `${result.stdout}${result.stderr}`.trim() : undefined;
}

/** The config template and the PostgreSQL schemas, from the module as resolved above. */
function copyModuleFiles(l: ReturnType<typeof layout>, env: NodeJS.ProcessEnv): void {
  const logFile = path.join(l.logs, 'module-dir.log');
  const dir = run('go', ['list', '-m', '-f', '{{.Dir}}', MODULE], { cwd: l.module, env, step: 'copy', logFile }).trim();
  try {
    for (const rel of ['config/docker.yaml', 'schema/postgresql/v12']) {
      rmSync(path.join(l.cache, rel), { recursive: true, force: true });
      cpSync(path.join(dir, rel), path.join(l.cache, rel), { recursive: true });
    }
  } catch (err) {
    throw new TemporalBuildError('copy', `from ${dir}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Runs a command to completion with its output in `logFile`; returns its stdout. `what` names the build in errors. */
export function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; step: TemporalBuildStep; logFile: string; what?: string }): string {
  const result = spawnSync(cmd, args, { cwd: opts.cwd, env: opts.env, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, maxBuffer: 256 * 1024 * 1024 });
  writeFileSync(opts.logFile, `$ ${cmd} ${args.join(' ')}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  if (result.error) {
    const why = (result.error as NodeJS.ErrnoException).code === 'ENOENT' ? `${cmd} is not installed (a Go toolchain is needed to build the server)` : result.error.message;
    throw new TemporalBuildError(opts.step, why, opts.logFile, opts.what);
  }
  if (result.status !== 0) {
    const tail = (result.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
    throw new TemporalBuildError(opts.step, `${cmd} ${args.join(' ')} exited ${result.status}: ${tail}`, opts.logFile, opts.what);
  }
  return result.stdout ?? '';
}
