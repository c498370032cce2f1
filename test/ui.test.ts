/**
 * The Temporal Web UI, in a real headless Chromium, shows what operators rely on: a run's current details, the
 * `state` query through the Queries tab, and the runs list filtered by the `AgentState` search attribute.
 * The jest global server is headless, so this file starts its own dev server with the UI on free ports.
 * Screenshots go to test-results/ui/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { startDevServer, type DevServerHandle } from '../scripts/lib/dev-server';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { freePort } from '../scripts/lib/free-port';
import { launchChromium, UI_TIMEOUT_MS, withScreenshot as saveShot } from './support/browser';

let dir: string;
let server: DevServerHandle;
let h: AgentHarness;
let browser: Browser;
let page: Page;
let ui: string;
let completed: WorkflowHandle;
let waiting: WorkflowHandle;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-ui-test-'));
  server = await startDevServer({
    port: await freePort(),
    uiPort: await freePort(),
    headless: false,
    dbFile: path.join(dir, 'dev.sqlite'),
    logFile: path.join(dir, 'server.log'),
  });
  ui = server.uiUrl!;
  // The harness connects to TEMPORAL_TEST_ADDRESS; point it at this server only while it connects.
  const globalAddress = process.env.TEMPORAL_TEST_ADDRESS;
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  try {
    h = await startAgentHarness();
  } finally {
    process.env.TEMPORAL_TEST_ADDRESS = globalAddress;
  }

  h.model.register('list-then-answer', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] } : { text: 'The workspace holds hello.txt' },
  );
  h.model.register('writer', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'x' } }] } : { text: 'written' },
  );
  completed = await h.start({ prompt: 'What is in the workspace?', model: 'list-then-answer' });
  waiting = await h.start({ prompt: 'Write out.txt', model: 'writer', approval: { tools: ['writeFile'] } });
  expect((await completed.result()).status).toBe('COMPLETED');
  await h.waitForState(waiting, (s) => s.state === 'AWAITING_APPROVAL');

  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  // Only the local UI: the UI's news feed and anything else off this machine are refused, not waited for.
  await context.route((url) => !url.href.startsWith(ui), (route) => route.abort());
  page = await context.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Opens a run's page (the UI redirects to its latest run) and one of its tabs. */
async function openRunTab(workflowId: string, tab: string): Promise<void> {
  await page.goto(`${ui}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
  await page.getByRole('tab', { name: tab }).click();
}

/** The runs list for a visibility query, reloaded once if `workflowId` is not listed yet (visibility lags a little). */
async function listRuns(query: string, workflowId: string): Promise<void> {
  await page.goto(`${ui}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
  const row = page.getByRole('link', { name: workflowId, exact: true });
  await row.waitFor().catch(async () => {
    await page.reload();
    await row.waitFor();
  });
}

const withScreenshot = (name: string, check: () => Promise<void>) => saveShot(page, name, check);

// Each page's first render is slow on a loaded machine; the UI timeout bounds every single wait.
const TEST_TIMEOUT_MS = 120_000;

test("the run's page shows the current details the workflow sets", () =>
  withScreenshot('current-details.png', async () => {
    await openRunTab(waiting.workflowId, 'User Metadata');
    // The UI renders current details (markdown) in a sandboxed iframe.
    const details = page.frameLocator('#user-metadata-current-details').locator('body');
    await details.getByText('AWAITING_APPROVAL', { exact: true }).waitFor();
    await details.getByText('awaiting approval: writeFile (w1)').waitFor();
  }), TEST_TIMEOUT_MS);

test("the Queries tab leads with the state query, runs it without an argument, and shows the run's view", () =>
  withScreenshot('state-query.png', async () => {
    await openRunTab(waiting.workflowId, 'Queries');
    // The UI lists queries by name and preselects the first: `state`, which needs no argument, so Run Query as it is.
    await waitFor(async () => (await page.getByTestId('query-select').inputValue()) === 'state' || undefined, UI_TIMEOUT_MS, 'the preselected query');
    const names = await page.locator('#query-select-select [role=option] .menu-item-wrapper > span').allTextContents();
    expect(names.filter((name) => !name.startsWith('__'))).toEqual(['state', 'stateAt', 'stateSnapshotAt', 'steps']);
    await page.getByRole('button', { name: 'Run Query' }).click();
    const result = page.getByRole('textbox', { name: 'Query Result' });
    await result.locator('.cm-line', { hasText: '"state": "AWAITING_APPROVAL"' }).waitFor();
    await result.locator('.cm-line', { hasText: '"pendingApproval": [' }).waitFor();
  }), TEST_TIMEOUT_MS);

test('the runs list filtered by AgentState shows the runs in that state only', async () => {
  await withScreenshot('list-completed.png', async () => {
    await listRuns('AgentState="COMPLETED"', completed.workflowId);
    expect(await page.getByRole('link', { name: waiting.workflowId, exact: true }).count()).toBe(0);
  });
  // The other way round too, so the filter is seen to select and not merely to list whatever there is.
  await withScreenshot('list-awaiting-approval.png', async () => {
    await listRuns('AgentState="AWAITING_APPROVAL"', waiting.workflowId);
    expect(await page.getByRole('link', { name: completed.workflowId, exact: true }).count()).toBe(0);
  });
}, TEST_TIMEOUT_MS);
