/**
 * A real OpenTelemetry Collector for test/genai-traces.test.ts: the collector's own OTLP receiver and the contrib file
 * exporter (scripts/otelcol/main.go, modules pinned by its go.mod and go.sum), built with `go build` from the Go module
 * proxy into `~/.cache/durable-agent-worker/otelcol` (outside the clone), once per machine. No registry ships a collector binary (PyPI and npm have none), so
 * the test setup builds it; Go's module and build caches stay outside the clone (GOMODCACHE, GOCACHE).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { projectCacheDir } from './cache-dir';
import { findOnPath, PROJECT_ROOT } from './temporal-cli';

/** The collector release of every module in scripts/otelcol/go.mod; the binary's name carries it, so a bump rebuilds. */
export const OTELCOL_VERSION = '0.161.0';
const SOURCE = path.join(PROJECT_ROOT, 'scripts', 'otelcol');
export const OTELCOL_BIN = path.join(projectCacheDir(process.env, 'otelcol'), `otelcol-test-${OTELCOL_VERSION}`);

/** The collector binary, built first when it is not there; throws naming what is missing (no Go) or what failed. */
export function ensureOtelcol(log: (line: string) => void = (line) => console.error(line)): string {
  if (existsSync(OTELCOL_BIN) && spawnSync(OTELCOL_BIN, ['--version'], { timeout: 15_000 }).status === 0) return OTELCOL_BIN;
  if (!findOnPath('go')) throw new Error('test/genai-traces.test.ts needs Go to build its OpenTelemetry Collector (scripts/otelcol): install Go 1.26 or later (Debian: apt-get install golang-go), then run the tests again.');
  log(`test setup: building an OpenTelemetry Collector ${OTELCOL_VERSION} (go build scripts/otelcol into ${path.dirname(OTELCOL_BIN)}): test/genai-traces.test.ts sends it the worker's spans over OTLP`);
  mkdirSync(path.dirname(OTELCOL_BIN), { recursive: true });
  try {
    execFileSync('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', OTELCOL_BIN, '.'], { cwd: SOURCE, stdio: ['ignore', 'ignore', 'pipe'], timeout: 30 * 60_000 });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim().split('\n').slice(-5).join('\n');
    throw new Error(`go build of the test collector (scripts/otelcol) failed: ${stderr || (err as Error).message}`);
  }
  return OTELCOL_BIN;
}
