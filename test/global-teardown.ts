import { rmSync } from 'node:fs';
import { takeTestServer } from './global-setup';

/** Stops the server that global-setup started; does nothing when an external server was reused. */
export default async function globalTeardown(): Promise<void> {
  const state = takeTestServer();
  if (!state) return;
  await state.server.stop();
  rmSync(state.dir, { recursive: true, force: true });
}
