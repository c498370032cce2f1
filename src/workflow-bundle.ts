/**
 * Workflow code bundled once, ahead of time (`src/bin/build-workflows.ts`; the Docker image does it at build), so a
 * worker is polling about 2 s after it starts instead of spending 6-8 s in webpack at every boot: a restarted or
 * added worker picks up runs sooner (BENCHMARKS.md, figure (d)). Workflow interceptors are compiled into a bundle,
 * so there are two: one plain and one with the OpenTelemetry workflow interceptors, chosen by AGENT_TRACING.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import { WORKFLOW_TRACING_MODULE } from './observability/tracing';

export const WORKFLOWS_PATH = require.resolve('./workflows');

export const bundleFile = (dir: string, tracing: boolean): string => path.join(dir, tracing ? 'workflows-tracing.js' : 'workflows.js');

/** Writes both bundles into `dir`; returns their paths. */
export async function buildWorkflowBundles(dir: string): Promise<string[]> {
  fs.mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const tracing of [false, true]) {
    const { code } = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: tracing ? [WORKFLOW_TRACING_MODULE] : [],
      logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
    });
    const file = bundleFile(dir, tracing);
    fs.writeFileSync(file, code);
    files.push(file);
  }
  return files;
}

/**
 * The worker's workflow code: the prebuilt bundle in `bundleDir` (AGENT_WORKFLOW_BUNDLE_DIR) that matches its
 * tracing, or, without one, the sources bundled at boot. A bundle is built from the sources of its day: rebuild it
 * with the code, as the image build does.
 */
export function workflowCode(bundleDir: string | undefined, tracing: boolean): Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> {
  if (!bundleDir) return { workflowsPath: WORKFLOWS_PATH };
  const file = bundleFile(path.resolve(bundleDir), tracing);
  if (!fs.existsSync(file)) {
    throw new Error(`AGENT_WORKFLOW_BUNDLE_DIR is ${bundleDir}, which has no ${path.basename(file)}: build it with \`npm run build:workflows -- ${bundleDir}\``);
  }
  return { workflowBundle: { codePath: file } };
}
