/**
 * The gateway's /ui list of runs in a real headless Chromium (1,400 px wide), on a real worker, dev server and gateway:
 * statuses that do not contradict each other, and rows that fit the window. Screenshots go to test-results/ui/list-*.png.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { launchChromium, withScreenshot } from './support/browser';

const TOKEN = 'ui-list-test-token';
let h: AgentHarness;
let agents: AgentClient;
let gateway: FastifyInstance;
let base: string;
let browser: Browser;

beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  gateway = buildGateway({ agents, token: TOKEN, pollIntervalMs: 100 });
  await gateway.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await h?.close();
});

async function openList(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  await page.goto(`${base}/ui`);
  await page.locator('#token').fill(TOKEN);
  await page.getByRole('button', { name: 'Use token' }).click();
  return page;
}

test("an aborted run is listed as ABORTED and closed, not as Temporal's COMPLETED; the list fits 1,400 px with each date on one line", async () => {
  h.model.register('list-stall', [{ text: 'a long answer that never ends', chunkSize: 2, stallAfterChunks: 1 }]);
  h.model.register('list-quick', [{ text: 'done' }]);
  // An id with no place to break (ids are any 1-200 of [A-Za-z0-9._:@/-]), with a prompt that fills its cell.
  const aborted = await agents.start({ prompt: 'Summarise every file in the workspace and explain each in detail '.repeat(3), model: 'list-stall' }, { workflowId: `nightly_report_2026_12_01.5f0c2a9be41d.fork_12.9a8b7c.fork_3.1d2e3f.${Date.now()}` });
  const done = await agents.start({ prompt: 'quick', model: 'list-quick' });
  await done.result();
  await waitFor(async () => ((await aborted.state({})).state === 'STREAMING' ? true : undefined), 20_000, 'streaming');
  await aborted.abort('enough');
  await aborted.result();

  const page = await openList(1_400);
  await withScreenshot(page, 'list-1400.png', async () => {
    const row = page.locator(`tr[data-workflow-id="${aborted.workflowId}"]`);
    // The visibility store catches up with the close after a moment.
    await row.locator('td:nth-child(5)').filter({ hasText: /\d/ }).waitFor();
    await page.locator(`tr[data-workflow-id="${done.workflowId}"] td:nth-child(5)`).filter({ hasText: /\d/ }).waitFor();
    expect(await row.locator('.state').textContent()).toBe('ABORTED');
    expect(await row.getByTestId('execution').textContent()).toBe('closed');
    expect(await page.locator(`tr[data-workflow-id="${done.workflowId}"]`).getByTestId('execution').textContent()).toBe('closed');
    expect(await page.locator('#runs thead').textContent()).not.toContain('Temporal status');

    // In the page: the widths of what it lays out and of the window (the test's tsconfig has no DOM types).
    const widths = await page.evaluate(() => {
      const w = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
      return { page: w.document.documentElement.scrollWidth, window: w.innerWidth };
    });
    expect(widths.page).toBeLessThanOrEqual(widths.window);
    // Each start and close time on one line: the lines its text takes, whatever the height of the row.
    type Doc = { createRange(): { selectNodeContents(node: unknown): void; getClientRects(): ArrayLike<{ top: number }> } };
    const lines = await row.evaluate((tr) =>
      [...tr.querySelectorAll('td')].slice(3, 5).map((td) => {
        const range = (globalThis as unknown as { document: Doc }).document.createRange();
        range.selectNodeContents(td);
        return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
      }),
    );
    expect(lines).toEqual([1, 1]);
  });
  await page.close();
}, 90_000);

test("an unknown run's page says so, and shows neither an \"ended\" pill nor empty sections", async () => {
  const page = await openList(1_400);
  await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
  await page.goto(`${base}/ui/runs/no-such-run`);
  await withScreenshot(page, 'list-unknown-run.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^unknown run$/ }).waitFor();
    expect(await page.getByTestId('connection').isVisible()).toBe(false);
    const shown = await page.locator('#run-page section:visible').evaluateAll((sections) => sections.map((s) => s.getAttribute('aria-label')));
    expect(shown).toEqual(['Status']);
  });
  await page.close();
}, 60_000);

test('a run a schedule started is tagged "scheduled" in the list, and its page names the schedule', async () => {
  h.model.register('list-scheduled', () => ({ text: 'on schedule' }));
  const scheduleId = `ui-list-schedule-${Date.now()}`;
  await agents.schedules.create({ scheduleId, intervalMs: 24 * 3_600_000, input: { prompt: 'scheduled from the list test', model: 'list-scheduled' } });
  try {
    await agents.schedules.trigger(scheduleId);
    const run = await waitFor(async () => (await agents.schedules.describe(scheduleId)).recentRuns[0], 20_000, 'the schedule\'s run');
    await agents.handle(run.workflowId).result();
    const page = await openList(1_400);
    await withScreenshot(page, 'list-scheduled.png', async () => {
      const tag = page.locator(`tr[data-workflow-id="${run.workflowId}"] .tag[data-schedule="${scheduleId}"]`);
      await tag.waitFor();
      expect(await tag.textContent()).toBe('scheduled');
      // Other tests' schedules may have runs in the list too (one dev server for the whole suite): count this one's.
      expect(await page.locator(`tr .tag[data-schedule="${scheduleId}"]`).count()).toBe(1);
      await page.goto(`${base}/ui/runs/${encodeURIComponent(run.workflowId)}`);
      await page.locator('#links li[data-link="schedule"]').filter({ hasText: `started by schedule ${scheduleId}` }).waitFor();
    });
  } finally {
    await agents.schedules.delete(scheduleId);
  }
}, 90_000);
