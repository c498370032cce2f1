import { rmSync } from 'node:fs';
import { stackDown } from '../scripts/lib/stack/stack';
import { PRODUCTION_ENV } from './global-setup-production';

/** Stops the stack the production setup started; keeps its dir (data and logs) when STACK_TEST_KEEP=1. */
export default async function globalTeardown(): Promise<void> {
  const dir = process.env[PRODUCTION_ENV.dir];
  if (!dir) return;
  await stackDown(dir, (line) => console.log(`stack down: ${line}`));
  if (process.env.STACK_TEST_KEEP === '1') console.log(`stack data and logs kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
