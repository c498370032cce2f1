/**
 * The package as a user gets it: `npm pack` (prepack builds dist/), the tarball installed with zod into an empty
 * project, then plain Node with no tsx. A `.mjs` worker defines its own tool with `defineTool` and starts with
 * `createAgentWorker({ tools })` (bundling the workflow code from dist/ at boot); a `.mjs` client starts a run with
 * `AgentClient` from `durable-agent-worker/client` against the test's dev server and a scripted model that calls the
 * tool. Also: the client entry loads no native module, and examples/service type-checks against the published types.
 * Slow tier: the install compiles better-sqlite3 (about 1.5 minutes on 2 cores).
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { testServerAddress } from './support/temporal';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');
const SCRIPT = 'package-test';
const MINUTES = 60_000;

let dir: string;
let project: string;
let model: ScriptedModel;

/** `npm` in `cwd`; stdout, and stderr for the warnings. */
async function npmWithWarnings(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run('npm', args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
}
const npm = async (args: string[], cwd: string): Promise<string> => (await npmWithWarnings(args, cwd)).stdout;

/** Runs `node file` in the consumer project; resolves with stdout, rejects with stderr on a non-zero exit. */
function node(file: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 2 * MINUTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: project, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`node ${file} exited with ${code ?? signal}\n${out}\n${err}`));
    });
  });
}

const dependencyVersion = (name: string): string => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  return pkg.dependencies[name] ?? pkg.devDependencies[name];
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-package-'));
  project = path.join(dir, 'consumer');
  mkdirSync(project);
  // Built first, then packed without prepack's second build (whose output would share stdout with the JSON).
  await npm(['run', 'build'], ROOT);
  const [packed] = JSON.parse(await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], ROOT)) as { filename: string; files: { path: string }[] }[];
  const files = packed.files.map((f) => f.path);
  expect(files.filter((p) => !p.startsWith('dist/') && !p.startsWith('docs/')).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
  expect(files).toEqual(expect.arrayContaining(['dist/index.d.ts', 'dist/client.d.ts', 'dist/workflows/index.js', 'dist/bin/agent.js']));
  // What docs/embedding.md tells a service to add: the install scripts it approves, and cookie 1 on Node 20.
  const { allowScripts, overrides } = JSON.parse(/```json consumer-package\n([\s\S]*?)```/.exec(readFileSync(path.join(ROOT, 'docs', 'embedding.md'), 'utf8'))![1]);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, allowScripts, overrides }));
  // The example's own dependencies too, for its type-check; the repository's versions, so the npm cache has them.
  const extras = ['zod', 'fastify', '@types/node'].map((name) => `${name}@${dependencyVersion(name)}`);
  const { stderr } = await npmWithWarnings(['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(dir, packed.filename), ...extras], project);
  expect(stderr).not.toMatch(/EBADENGINE|not yet covered by allowScripts/);
  model = await startScriptedModel();
  model.register(SCRIPT, ({ request }) => {
    const result = request.messages.find((m: { role: string }) => m.role === 'tool');
    return result ? { text: `Paris today: ${result.content}` } : { toolCalls: [{ name: 'getWeather', arguments: { city: 'Paris' } }] };
  });
}, 10 * MINUTES);

afterAll(async () => {
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('durable-agent-worker/client loads no native module in a fresh Node process, and the root entry does', async () => {
  const probe = (entry: string) => `
    import { createRequire } from 'node:module';
    await import('${entry}');
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(loaded.filter((m) => /\\.node$|core-bridge|better-sqlite3|@temporalio[\\\\/]worker/.test(m))));
  `;
  writeFileSync(path.join(project, 'probe-client.mjs'), probe('durable-agent-worker/client'));
  writeFileSync(path.join(project, 'probe-root.mjs'), probe('durable-agent-worker'));
  expect(JSON.parse(await node('probe-client.mjs'))).toEqual([]);
  // The check can see a native module: the worker side loads Temporal's core bridge.
  expect(JSON.parse(await node('probe-root.mjs'))).toEqual(expect.arrayContaining([expect.stringMatching(/core-bridge.*\.node$/)]));
});

test("the worker's entry maps the product's stack traces to its TypeScript, and reads no source map of the SDK", async () => {
  // What `node dist/bin/worker.js` (the image's CMD, without --enable-source-maps) imports first: src/bin/source-maps.ts.
  writeFileSync(
    path.join(project, 'probe-maps.cjs'),
    `const { findSourceMap } = require('node:module');
const dist = require('node:path').join(__dirname, 'node_modules/durable-agent-worker/dist');
require(dist + '/bin/source-maps.js');
const { workerConfig } = require(dist + '/config/index.js');
let stack = '';
try { workerConfig({ AGENT_LOG_LEVEL: 'nonsense' }); } catch (err) { stack = err.stack; }
console.log(JSON.stringify({ stack, sdk: !!findSourceMap(require.resolve('@temporalio/worker/lib/worker.js')), ours: !!findSourceMap(dist + '/config/index.js') }));
`,
  );
  const { stack, sdk, ours } = JSON.parse(await node('probe-maps.cjs'));
  expect(stack).toMatch(/AGENT_LOG_LEVEL must be[\s\S]*\bat \w+ \(.*src\/config\/index\.ts:\d+:\d+\)/);
  expect({ sdk, ours }).toEqual({ sdk: false, ours: true });
});

test('a plain .mjs worker with its own tool and a plain .mjs client complete a run that calls the tool', async () => {
  writeFileSync(
    path.join(project, 'worker.mjs'),
    `import { createAgentWorker, defineTool } from 'durable-agent-worker';
import { z } from 'zod';

const getWeather = defineTool({
  name: 'getWeather',
  description: 'The weather today in a city.',
  parameters: z.object({ city: z.string() }),
  sideEffects: false,
  async execute({ city }) {
    return city === 'Paris' ? 'sunny, 21 C' : 'unknown';
  },
});

const worker = await createAgentWorker({ tools: [getWeather], taskQueue: process.env.QUEUE });
console.log('worker ready');
await worker.run();
`,
  );
  writeFileSync(
    path.join(project, 'start-run.mjs'),
    `import { AgentClient } from 'durable-agent-worker/client';

const agents = await AgentClient.connect({ taskQueue: process.env.QUEUE });
try {
  const run = await agents.start({ prompt: 'What is the weather in Paris?', tools: ['getWeather'] });
  const result = await run.result();
  const view = await run.state({ includeMessages: true });
  console.log(JSON.stringify({ result, messages: view.messages }));
} finally {
  await agents.close();
}
`,
  );
  const env = {
    TEMPORAL_ADDRESS: testServerAddress(),
    QUEUE: `package-${process.pid}-${Date.now()}`,
    LLM_BASE_URL: model.url,
    LLM_MODEL: SCRIPT,
    AGENT_WORKSPACE: path.join(dir, 'workspace'),
    AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
    // Worker and client share the claim check's blob store.
    AGENT_BLOB_DIR: path.join(dir, 'blobs'),
  };
  mkdirSync(env.AGENT_WORKSPACE);
  const worker = spawn(process.execPath, ['worker.mjs'], { cwd: project, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
  let workerOutput = '';
  worker.stdout.on('data', (d: Buffer) => (workerOutput += d.toString()));
  worker.stderr.on('data', (d: Buffer) => (workerOutput += d.toString()));
  const exited = new Promise<number | null>((resolve) => worker.on('close', resolve));
  try {
    const out = await node('start-run.mjs', env).catch((err: Error) => {
      throw new Error(`${err.message}\nworker:\n${workerOutput}`);
    });
    const { result, messages } = JSON.parse(out.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Paris today: sunny, 21 C', toolCalls: 1 });
    expect(messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'tool', content: expect.stringContaining('sunny, 21 C') })]));
    expect(workerOutput).toContain('worker ready');
  } finally {
    worker.kill('SIGTERM');
    await exited;
  }
  expect(model.requests(SCRIPT)).toHaveLength(2);
}, 5 * MINUTES);

test('examples/service type-checks against the published types', async () => {
  const example = path.join(project, 'example');
  cpSync(path.join(ROOT, 'examples/service/src'), path.join(example, 'src'), { recursive: true });
  cpSync(path.join(ROOT, 'examples/service/tsconfig.json'), path.join(example, 'tsconfig.json'));
  const tsc = require.resolve('typescript/bin/tsc');
  // tsc reports type errors on stdout.
  const errors = await run(process.execPath, [tsc, '-p', example], { cwd: example }).then(
    () => '',
    (err: { stdout?: string; message: string }) => err.stdout || err.message,
  );
  expect(errors).toBe('');
  // The published types are what it checked against, not the repository's sources.
  const { stdout } = await run(process.execPath, [tsc, '-p', example, '--traceResolution'], { cwd: example, maxBuffer: 256 * 1024 * 1024 });
  expect(stdout).toMatch(/'durable-agent-worker\/client' was successfully resolved to '.*consumer\/node_modules\/durable-agent-worker\/dist\/client\.d\.ts'/);
}, 2 * MINUTES);
