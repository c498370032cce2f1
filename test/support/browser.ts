/**
 * Debian's Chromium through playwright-core for the Web UI tests: where it is, how it runs, where screenshots go,
 * and free ports for a dev server with its UI.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
export const SHOTS = path.resolve(__dirname, '..', '..', 'test-results', 'ui');
/** The UI is a SvelteKit app on a busy 2-core machine: its first render can take several seconds. */
export const UI_TIMEOUT_MS = 30_000;

/** Chromium with a fresh temporary profile that `close()` removes; also creates the screenshot folder. */
export function launchChromium(): Promise<Browser> {
  // `npm test`'s pretest installs it (scripts/setup-tests.ts): a missing browser is a failure, never a skip.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run npm test (its pretest installs it), or apt-get install -y chromium`);
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}


/** Runs `check`, then saves a screenshot whatever the outcome, so a failure can be seen as well as read. */
export async function withScreenshot(page: Page, name: string, check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } finally {
    await page.screenshot({ path: path.join(SHOTS, name) }).catch(() => undefined);
  }
}
