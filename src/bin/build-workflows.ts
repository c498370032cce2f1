#!/usr/bin/env node
/**
 * Builds the workflow bundles ahead of time: `npm run build:workflows -- [DIR]` (`node dist/bin/build-workflows.js DIR`
 * in the image build). DIR defaults to dist/workflow-bundles; workers load them with AGENT_WORKFLOW_BUNDLE_DIR=DIR.
 */
import { buildWorkflowBundles } from '../worker/workflow-bundle';

async function main(): Promise<void> {
  const dir = process.argv[2] ?? 'dist/workflow-bundles';
  const started = Date.now();
  const files = await buildWorkflowBundles(dir);
  console.log(`built ${files.join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s; run workers with AGENT_WORKFLOW_BUNDLE_DIR=${dir}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
