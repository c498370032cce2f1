/**
 * The Temporal Web UI for `npm run stack`: the Go module `github.com/temporalio/ui-server/v2` at the version of
 * docker-compose.yml's temporalio/ui image. The module carries the built UI (`ui/assets/local`, embedded into the
 * binary), so `go build` from the module proxy gives the whole UI. Its `config/docker.yaml` is the template the image
 * renders from TEMPORAL_* variables, copied beside the binary with the host set to 127.0.0.1. Cached like the server, outside the clone.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectCacheDir } from '../cache-dir';
import { acquireLock } from '../lock';
import { GO_TOOLCHAIN, run, TemporalBuildError } from './temporal-server-build';

/** Keep docker-compose.yml's temporalio/ui tag at this version. */
export const TEMPORAL_UI_VERSION = '2.53.3';
const MODULE = 'github.com/temporalio/ui-server/v2';
const PACKAGE = `${MODULE}/cmd/server`;
const RECIPE = `${MODULE}@v${TEMPORAL_UI_VERSION} ${GO_TOOLCHAIN} ${os.platform()}/${os.arch()}`;
const WHAT = 'temporal ui build';

export interface TemporalUiPaths {
  uiServerPath: string;
  /** Holds `config/docker.yaml`: the server's `--root`. */
  root: string;
  version: string;
}

/** Beside the server's cache: `.../durable-agent-worker/temporal-ui/<version>` (AGENT_TEMPORAL_SERVER_CACHE moves both). */
export function temporalUiCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENT_TEMPORAL_SERVER_CACHE) return path.resolve(env.AGENT_TEMPORAL_SERVER_CACHE, `ui-${TEMPORAL_UI_VERSION}`);
  return projectCacheDir(env, 'temporal-ui', TEMPORAL_UI_VERSION);
}

/** Builds the UI server once per machine (about a minute); later calls return the cached paths. */
export async function ensureTemporalUi(options: { log?: (line: string) => void } = {}): Promise<TemporalUiPaths> {
  const log = options.log ?? ((line: string) => console.error(line));
  const cache = temporalUiCacheDir();
  const paths: TemporalUiPaths = { uiServerPath: path.join(cache, 'bin', 'temporal-ui-server'), root: cache, version: TEMPORAL_UI_VERSION };
  const stamp = path.join(cache, 'ready.json');
  const template = path.join(cache, 'config', 'docker.yaml');
  const ready = () => {
    try {
      return (JSON.parse(readFileSync(stamp, 'utf8')) as { recipe?: string }).recipe === RECIPE && existsSync(paths.uiServerPath) && existsSync(template);
    } catch {
      return false;
    }
  };
  if (ready()) return paths;
  const logs = path.join(cache, 'logs');
  mkdirSync(logs, { recursive: true });
  const release = await acquireLock(path.join(cache, '.lock'), WHAT, 15 * 60_000, log);
  try {
    if (ready()) return paths;
    const started = Date.now();
    const env = { ...process.env, GOTOOLCHAIN: GO_TOOLCHAIN, GOFLAGS: '-mod=mod' };
    const moduleDir = path.join(cache, 'build');
    mkdirSync(moduleDir, { recursive: true });
    if (!existsSync(path.join(moduleDir, 'go.mod'))) writeFileSync(path.join(moduleDir, 'go.mod'), 'module durable-agent-worker/temporal-ui-build\n\ngo 1.26\n');
    const step = (s: 'resolve' | 'build' | 'copy', args: string[], logFile: string) => run('go', args, { cwd: moduleDir, env, step: s, logFile: path.join(logs, logFile), what: WHAT });
    log(`${WHAT}: ${PACKAGE}@v${TEMPORAL_UI_VERSION} (about a minute the first time; logs in ${logs})`);
    step('resolve', ['get', `${PACKAGE}@v${TEMPORAL_UI_VERSION}`], 'resolve.log');
    mkdirSync(path.dirname(paths.uiServerPath), { recursive: true });
    step('build', ['build', '-o', `${paths.uiServerPath}.part`, PACKAGE], 'build.log');
    renameSync(`${paths.uiServerPath}.part`, paths.uiServerPath);
    const dir = step('copy', ['list', '-m', '-f', '{{.Dir}}', MODULE], 'module-dir.log').trim();
    if (!existsSync(path.join(dir, 'ui', 'assets', 'local', 'index.html'))) {
      throw new TemporalBuildError('verify', `${MODULE}@v${TEMPORAL_UI_VERSION} carries no built UI (ui/assets/local/index.html)`, undefined, WHAT);
    }
    rmSync(path.join(cache, 'config'), { recursive: true, force: true });
    mkdirSync(path.join(cache, 'config'), { recursive: true });
    // The template leaves the host unset (all interfaces); the stack binds every listener to loopback.
    writeFileSync(template, `${readFileSync(path.join(dir, 'config', 'docker.yaml'), 'utf8')}\nhost: 127.0.0.1\n`);
    writeFileSync(stamp, JSON.stringify({ recipe: RECIPE, ...paths, builtInSeconds: Math.round((Date.now() - started) / 1000), at: new Date().toISOString() }, null, 2));
    log(`${WHAT}: ready in ${Math.round((Date.now() - started) / 1000)} s, cached in ${cache}`);
    return paths;
  } finally {
    release();
  }
}
