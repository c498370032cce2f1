/**
 * How the real model's launcher reports a server that dies before it serves: the signal or exit code, and the last
 * lines of its log, at once rather than as a timeout further on. The "server" here is a real process that ends the
 * way a broken llama-server build does (a native build with AMX kernels died with SIGSEGV on its first matmul).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeExit, launchLlamaServer, portableCpuFlags, type RealModelPaths } from '../scripts/lib/real-model';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'real-model-launch-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in binary: prints a few log lines like llama-server's, then ends as `ending` says. */
function fakeServer(name: string, ending: string): RealModelPaths {
  const serverPath = path.join(dir, name);
  const lines = Array.from({ length: 30 }, (_, i) => `echo "log line ${i + 1}" >&2`).join('\n');
  writeFileSync(serverPath, `#!/bin/sh\n${lines}\necho "init: llama threadpool init, n_threads = 2" >&2\n${ending}\n`);
  chmodSync(serverPath, 0o755);
  return { serverPath, modelPath: path.join(dir, 'model.gguf'), templatePath: path.join(dir, 'template.jinja') };
}

test('a server killed by SIGSEGV before /health answers: the error names the signal and shows the last log lines', async () => {
  const started = Date.now();
  const failure = launchLlamaServer(fakeServer('segv', 'kill -SEGV $$'), { contextSize: 512, maxTokens: 8 });

  await expect(failure).rejects.toThrow(/killed by SIGSEGV \(segmentation fault/);
  await expect(failure).rejects.toThrow(/init: llama threadpool init, n_threads = 2/);
  await expect(failure).rejects.toThrow(/log line 30/);
  // The last 20 lines, not the whole log.
  await expect(failure).rejects.not.toThrow(/log line 5\n/);
  // Reported when it happens, not after the 60 s readiness timeout.
  expect(Date.now() - started).toBeLessThan(10_000);
});

test('a server that exits with a code: the error names the code', async () => {
  await expect(launchLlamaServer(fakeServer('exit3', 'exit 3'), { contextSize: 512, maxTokens: 8 })).rejects.toThrow(/: exit code 3\n/);
});

test('a server binary that cannot be started: the error says so', async () => {
  const paths = { ...fakeServer('unused', 'exit 0'), serverPath: path.join(dir, 'missing-llama-server') };
  await expect(launchLlamaServer(paths, { contextSize: 512, maxTokens: 8 })).rejects.toThrow(/could not start: spawn .*ENOENT/);
});

test('describeExit explains the signals a broken build dies of', () => {
  expect(describeExit(null, 'SIGILL')).toMatch(/illegal instruction/);
  expect(describeExit(139, null)).toBe('exit code 139');
});

test('x86-64 builds are portable: never native, the x86-64-v3 set, no AVX-512 and no AMX', () => {
  const flags = portableCpuFlags('x64');
  expect(flags).toEqual(expect.arrayContaining(['-DGGML_NATIVE=OFF', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_F16C=ON', '-DGGML_AMX_TILE=OFF', '-DGGML_AVX512=OFF']));
  expect(portableCpuFlags('arm64')).toContain('-DGGML_NATIVE=OFF');
  expect(portableCpuFlags('arm64').some((f) => f.includes('AVX'))).toBe(false);
});
