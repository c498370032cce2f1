import path from 'node:path';
import { ensureRealModel } from '../scripts/lib/real-model';
import startTestServer from './global-setup';

const REAL_MODEL_TEST = path.join(__dirname, 'real-model.test.ts');

/**
 * The `slow` project's global setup: provisions the real model server when the run includes its tier (a fresh machine
 * builds llama-server, about 8 minutes, once), then the dev server that `integration` shares (global-setup.ts).
 * Only this project holds the real tier, so `npm run test:integration` never builds llama-server.
 */
export default async function globalSetup(globalConfig: { testPathPattern?: string } = {}): Promise<void> {
  const pattern = globalConfig.testPathPattern;
  if (!pattern || new RegExp(pattern, 'i').test(REAL_MODEL_TEST)) {
    const started = Date.now();
    await ensureRealModel({ log: (line) => console.log(`\n${line}`) });
    console.log(`\nReal model server (llama-server) provisioned in ${Date.now() - started} ms`);
  }
  await startTestServer();
}
