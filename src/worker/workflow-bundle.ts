/**
 * Workflow code bundled once, ahead of time (`src/bin/build-workflows.ts`; the Docker image does it at build), so a
 * worker is polling about 2 s after it starts instead of spending 6-8 s in webpack at every boot: a restarted or
 * added worker picks up runs sooner (BENCHMARKS.md, figure (d)). Workflow interceptors and the failure converter are
 * compiled into a bundle, so there are four: with or without the OpenTelemetry workflow interceptors (AGENT_TRACING),
 * and with or without the failure converter that encrypts failure messages (AGENT_ENCRYPTION_KEYS, docs/security.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions, type WorkerOptions, type WorkflowBundle } from '@temporalio/worker';
import { WORKFLOW_TRACING_MODULE } from '../observability/tracing';
import { ENCRYPTED_FAILURE_CONVERTER_PATH } from '../codec';

export const WORKFLOWS_PATH = require.resolve('../workflows');

/** The prebuilt bundle in `dir` for a worker with tracing or not, and with encryption's failure converter or not. */
export const bundleFile = (dir: string, tracing: boolean, encryptedFailures = false): string =>
  path.join(dir, `workflows${tracing ? '-tracing' : ''}${encryptedFailures ? '-encrypted' : ''}.js`);

/**
 * Modules the worker's shared V8 context loads once, not once per run (`preloadModules`, with the SDK's default
 * `reuseV8Context`): zod alone (common/zod-preload.ts). The product's schemas are built by each run, in its own module
 * instances: nothing of the product's is shared between runs (docs/embedding.md, "What runs share").
 */
export const PRELOAD_MODULES: readonly string[] = ['zod', require.resolve('../common/zod-preload')];

/** Webpack's report of every module bundled is noise to whoever runs this: only its warnings and errors are shown. */
export const quietBundler: BundleOptions['logger'] = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

type WebpackConfiguration = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];

/** What the sandbox's Node runs natively, as tsconfig's target: the SDK's bundler compiles our TypeScript for ES2017. */
const SANDBOX_TARGET = 'es2022';

/**
 * Compiles the workflow sources for ES2022 instead of the SDK's ES2017, so object spread and `??` stay native
 * rather than helper calls: the machine spreads its snapshot several times a transition (BENCHMARKS.md, issue 26).
 */
export function nativeSyntax(config: WebpackConfiguration): WebpackConfiguration {
  for (const rule of config.module?.rules ?? []) {
    const use = rule && typeof rule === 'object' && !Array.isArray(rule.use) && typeof rule.use === 'object' ? rule.use : undefined;
    const jsc = use && typeof use.options === 'object' ? (use.options as { jsc?: { target?: string } }).jsc : undefined;
    if (use?.loader?.includes('swc-loader') && jsc) jsc.target = SANDBOX_TARGET;
  }
  return config;
}

/**
 * The bundle's inline source map without the sources' text (webpack's `inline-nosources-source-map` instead of the
 * SDK's `inline-source-map`): stack traces and the sandbox's promise stacks keep their files, lines and columns, and
 * every worker's start has 1.3 MB less to decode, parse and hand to the SDK's source-map reader (the bundle is 2.1 MB
 * instead of 3.8). The text is read only for the UI's stack trace with the SDK's `showStackTraceSources`, which the
 * product's workers leave off (BENCHMARKS.md, issue 26, figure (d)).
 */
export function withoutSourcesText(config: WebpackConfiguration): WebpackConfiguration {
  config.devtool = 'inline-nosources-source-map';
  return config;
}

/**
 * Webpack's scope hoisting (`concatenateModules`, on in its production mode, off in the development mode the SDK
 * bundles in): the workflow sources become one module instead of about 50. The sandbox instantiates workflow code
 * for every run, and each module instance defines its exports one getter at a time, so a run of 5 steps spent more
 * time loading its modules than in its first transition (BENCHMARKS.md, issue 26). A module reached from outside
 * the workflow sources (the preloaded ones, shared by every run) stays a module of its own.
 */
export function scopeHoisted(config: WebpackConfiguration): WebpackConfiguration {
  config.optimization = { ...config.optimization, concatenateModules: true };
  return config;
}

/** Every change the product makes to the SDK's webpack configuration. */
export const sandboxWebpackConfig = (config: WebpackConfiguration): WebpackConfiguration => scopeHoisted(withoutSourcesText(nativeSyntax(config)));

/**
 * The agent workflows bundled as workers run them (with the preloaded modules); `tracing` adds the OpenTelemetry
 * workflow interceptors; `converters`, the worker's data converter's payload and failure converters (the encrypted
 * failure converter: docs/security.md), as the SDK bundles them at a worker's creation.
 */
export function bundleAgentWorkflows(
  options: { tracing?: boolean; logger?: BundleOptions['logger']; converters?: Pick<BundleOptions, 'payloadConverterPath' | 'failureConverterPath'> } = {},
): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    ...options.converters,
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: options.tracing ? [WORKFLOW_TRACING_MODULE] : [],
    preloadModules: [...PRELOAD_MODULES],
    webpackConfigHook: sandboxWebpackConfig,
    logger: options.logger ?? quietBundler,
  });
}

/** Writes the four bundles into `dir` (tracing or not, encrypted failures or not); returns their paths. */
export async function buildWorkflowBundles(dir: string): Promise<string[]> {
  fs.mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const tracing of [false, true]) {
    for (const encrypted of [false, true]) {
      const { code } = await bundleAgentWorkflows({ tracing, ...(encrypted ? { converters: { failureConverterPath: ENCRYPTED_FAILURE_CONVERTER_PATH } } : {}) });
      const file = bundleFile(dir, tracing, encrypted);
      fs.writeFileSync(file, code);
      files.push(file);
    }
  }
  return files;
}

/** What a worker that bundles at boot passes (`workflowsPath` and the preloaded modules). */
export const bundleAtBoot = (): Pick<WorkerOptions, 'workflowsPath' | 'bundlerOptions'> => ({
  workflowsPath: WORKFLOWS_PATH,
  bundlerOptions: { preloadModules: [...PRELOAD_MODULES], webpackConfigHook: sandboxWebpackConfig },
});

/**
 * The worker's workflow code: the prebuilt bundle in `bundleDir` (AGENT_WORKFLOW_BUNDLE_DIR) that matches its
 * tracing and its failure converter (`encryptedFailures`: the data converter's is encryption's), or, without one,
 * the sources bundled at boot. A bundle is built from the sources of its day: rebuild it with the code, as the image
 * build does.
 */
export function workflowCode(bundleDir: string | undefined, tracing: boolean, encryptedFailures = false): Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle' | 'bundlerOptions'> {
  if (!bundleDir) return bundleAtBoot();
  const file = bundleFile(path.resolve(bundleDir), tracing, encryptedFailures);
  if (!fs.existsSync(file)) {
    throw new Error(`AGENT_WORKFLOW_BUNDLE_DIR is ${bundleDir}, which has no ${path.basename(file)}: build it with \`npm run build:workflows -- ${bundleDir}\``);
  }
  return { workflowBundle: { codePath: file } };
}
