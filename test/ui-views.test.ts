/**
 * The page's views of how a run went (src/gateway/ui/views.js), in a real headless Chromium on a real worker, dev
 * server and gateway: a run started from the page's form, its input, conversation, machine picture, activities and
 * timeline while it waits (live) and once it ended; time travel (a step's state, a diff, a fork and the links between
 * the two runs), a what-if fork from the page's form and the two runs side by side; children of a pattern as links; and the list's search by text, agent and time, with duration and
 * cost; steering (a message queued and one that interrupts, from the message box), the model in use and its switch,
 * and the tool policy's marks. Screenshots go to test-results/ui/views-*.png.
 */
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { defineAgent, type ToolPolicy } from '../src/activities';
import { AgentClient } from '../src/client';
import type { RunStateView } from '../src/common/view';
import { buildGateway } from '../src/gateway';
import type { ActivityRecord } from '../src/gateway/run-activities';
import { transitionTable } from '../src/machine/machine';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { launchChromium, withScreenshot } from './support/browser';

const TOKEN = 'ui-views-test-token';

/** Acts only on the steering test's calls (paths `policy-*`): one denied, one held for approval, one rewritten. */
const steeringPolicy: ToolPolicy = (call) => {
  const target = String(call.arguments?.path ?? '');
  if (target === 'policy-deny.txt') return { action: 'deny', message: 'Not on this worker.' };
  if (target === 'policy-approve.txt') return { action: 'approve', reason: 'a person looks first' };
  if (target === 'policy-rewrite.txt') return { action: 'rewrite', arguments: { path: 'hello.txt' }, reason: 'the file that exists' };
  return { action: 'allow' };
};
const PAGE_TIMEOUT_MS = 20_000;
let h: AgentHarness;
let agents: AgentClient;
let gateway: FastifyInstance;
let base: string;
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  h = await startAgentHarness(undefined, { agents: [defineAgent({ name: 'drafter', instructions: 'You write drafts for the team.', model: 'views-writer' })], toolPolicy: steeringPolicy });
  agents = new AgentClient(h.env.client, h.taskQueue);
  // A write that needs a person's approval; once it is done (a tool message in the conversation), the answer.
  h.model.register('views-writer', ({ request }) =>
    !(request.messages as Array<{ role: string }>).some((m) => m.role === 'tool')
      ? { text: 'I will write the draft.', toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'draft.txt', content: 'a draft' } }] }
      : { text: 'The draft is written.' },
  );
  gateway = buildGateway({ agents, token: TOKEN, heartbeatMs: 1_000, pollIntervalMs: 100 });
  await gateway.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 1800 } });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await h?.close();
});

const authed = { authorization: `Bearer ${TOKEN}` };
const get = async <T>(path: string): Promise<T> => (await (await fetch(`${base}${path}`, { headers: authed })).json()) as T;
const apiState = (id: string) => get<RunStateView>(`/v1/runs/${encodeURIComponent(id)}`);

async function openPage(url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}${url}`);
  await page.locator('#token').fill(TOKEN);
  await page.getByRole('button', { name: 'Use token' }).click();
  return page;
}

/** Every edge of the picture is a pair the table has, and every pair the table has (bar self-loops) is drawn. */
function tableEdges(): string[] {
  const edges = new Set<string>();
  for (const [from, events] of Object.entries(transitionTable())) for (const targets of Object.values(events)) for (const to of targets as string[]) if (to !== from) edges.add(`${from}>${to}`);
  return [...edges].sort();
}

test('a run started from the form: input, conversation, machine, activities and timeline, live and ended; then time travel and search', async () => {
  const page = await openPage('/ui');
  await page.locator('#start-run summary').click();
  const form = page.locator('#start-form');
  // Bad input is refused with the field named, and nothing starts.
  await form.getByLabel('Prompt').fill('Draft the release note');
  await form.getByLabel('Max loops').fill('0');
  await form.getByRole('button', { name: 'Start' }).click();
  await page.getByTestId('start-result').filter({ hasText: /maxLoops/ }).waitFor();
  await form.getByLabel('Max loops').fill('7');
  await form.getByLabel('Agent').fill('drafter');
  await form.getByLabel('Approval for').fill('writeFile');
  await withScreenshot(page, 'views-start-form.png', async () => undefined);
  await form.getByRole('button', { name: 'Start' }).click();
  await page.waitForURL(/\/ui\/runs\/agent-/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);

  // Live: waiting for approval.
  await withScreenshot(page, 'views-live.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^AWAITING_APPROVAL$/ }).waitFor();
    const state = await apiState(id);
    expect(state.limits.maxLoops).toBe(7);
    await page.locator('#input dd[data-field="prompt"]').filter({ hasText: /^Draft the release note$/ }).waitFor();
    await page.locator('#input dd[data-field="system prompt"]').filter({ hasText: 'You write drafts for the team.' }).waitFor();
    const call = page.locator('#conversation .tool-call[data-tool-call-id="w1"]');
    await call.filter({ hasText: 'writeFile' }).filter({ hasText: 'no result yet' }).waitFor();
    // The picture is the table's: the same edges, the current state outlined, the path taken bold.
    await page.locator('#machine g.node-current[data-state="AWAITING_APPROVAL"]').waitFor();
    const drawn = await page.locator('#machine path[data-edge]').evaluateAll((paths) => paths.map((p) => p.getAttribute('data-edge')!).sort());
    expect(drawn).toEqual(tableEdges());
    // Each edge names its rows (event and guard), from /v1/machine's rows.
    const approvalEdge = await page.locator('#machine path[data-edge="PROCESSING>AWAITING_APPROVAL"]').getAttribute('data-rows');
    expect(approvalEdge?.split('; ')).toContain('PROCESS [needsApproval]');
    const taken = await page.locator('#machine path.edge-taken').evaluateAll((paths) => paths.map((p) => p.getAttribute('data-edge')));
    const path = state.transitions.filter((t) => t.from !== t.to).map((t) => `${t.from}>${t.to}`);
    expect(new Set(taken)).toEqual(new Set(path));
    // The model call's tokens, as the history has them, add up to the run's.
    await page.locator('#activities tr[data-activity="callModel"]').first().waitFor();
    const rows = await page.locator('#activities tr[data-activity="callModel"]').count();
    expect(rows).toBe(state.usage.modelCalls);
    const promptTokens = await page.locator('#activities tr[data-activity="callModel"] td:nth-child(6)').allTextContents();
    expect(promptTokens.map(Number).reduce((a, b) => a + b, 0)).toBe(state.usage.promptTokens);
    // The state it is in has lasted "so far".
    await page.locator('#timeline li').last().filter({ hasText: /AWAITING_APPROVAL for .* so far/ }).waitFor();
  });

  await agents.handle(id).approve({ toolCallId: 'w1', approved: true });

  // Ended: the tool's result is under its call, every state before the last has a duration.
  await withScreenshot(page, 'views-ended.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
    await page.locator('#conversation .tool-call[data-tool-call-id="w1"] .tool-result').filter({ hasText: 'wrote 7 bytes to draft.txt' }).waitFor();
    await page.locator('#conversation .msg-assistant').filter({ hasText: 'The draft is written.' }).waitFor();
    await page.locator('#machine g.node-current[data-state="COMPLETED"]').waitFor();
    const state = await apiState(id);
    await waitFor(async () => (await page.locator('#activities tr[data-activity="callModel"]').count()) === state.usage.modelCalls || undefined, PAGE_TIMEOUT_MS, 'both model calls');
    await page.locator('#activities tr[data-activity="executeTool"]').filter({ hasText: 'completed' }).waitFor();
    const lasted = await page.locator('#timeline li .lasted').allTextContents();
    expect(lasted).toHaveLength(state.transitions.length - 1);
    expect(lasted.every((l) => / for \d/.test(l) && !l.includes('so far'))).toBe(true);
  });
  const activities = (await get<{ activities: ActivityRecord[] }>(`/v1/runs/${id}/activities`)).activities.filter((a) => a.activity === 'callModel');
  expect(activities.map((a) => a.model?.callNumber)).toEqual([1, 2]);
  expect(activities.every((a) => a.latencyMs! >= 0 && a.model?.usage && a.model.model)).toBe(true);

  // Time travel: the state at the step that waited, a diff to the end, a fork from it.
  const state = await apiState(id);
  const waited = state.step - state.transitions.length + 1 + state.transitions.findIndex((t) => t.to === 'AWAITING_APPROVAL');
  const step = page.locator(`#timeline li[data-step="${waited}"]`);
  await withScreenshot(page, 'views-step.png', async () => {
    await step.getByRole('button', { name: 'view' }).click();
    await page.getByTestId('travel-result').filter({ hasText: `State at step ${waited}` }).filter({ hasText: 'AWAITING_APPROVAL' }).waitFor();
    await page.locator('#travel-result .tool-call[data-tool-call-id="w1"]').filter({ hasText: 'no result yet' }).waitFor();
    await page.getByTestId('travel-result').scrollIntoViewIfNeeded();
  });
  await withScreenshot(page, 'views-diff.png', async () => {
    await step.getByLabel(`diff from step ${waited}`).check();
    await page.locator(`#timeline li[data-step="${state.step}"]`).getByLabel(`diff to step ${state.step}`).check();
    await page.getByRole('button', { name: 'Diff from → to' }).click();
    await page.locator('#diff tr').filter({ hasText: 'state' }).filter({ hasText: 'COMPLETED' }).waitFor();
    await page.locator('#diff tr').filter({ hasText: /^answer/ }).filter({ hasText: 'The draft is written.' }).waitFor();
  });
  await step.getByRole('button', { name: 'fork' }).click();
  const forkLink = page.getByTestId('forked').getByRole('link');
  await forkLink.waitFor();
  const forkId = (await forkLink.textContent())!;
  expect((await apiState(forkId)).origin).toEqual({ kind: 'fork', workflowId: id, step: waited });
  await page.locator('#links li[data-link="fork"]').getByRole('link', { name: forkId }).waitFor();
  await withScreenshot(page, 'views-fork.png', async () => {
    await forkLink.click();
    await page.waitForURL(`${base}/ui/runs/${forkId}`);
    await page.locator('#links li[data-link="origin"]').filter({ hasText: `forked from ${id} at step ${waited}` }).waitFor();
    await page.getByTestId('state').filter({ hasText: /^AWAITING_APPROVAL$/ }).waitFor();
  });
  await agents.handle(forkId).abort('test over');

  // The list: search by prompt text, agent and start time; duration and cost of the ended run.
  const other = await agents.start({ prompt: 'Something else entirely', model: 'views-writer' });
  await page.goto(`${base}/ui`);
  const row = page.locator(`#runs tr[data-workflow-id="${id}"]`);
  await withScreenshot(page, 'views-search.png', async () => {
    await page.locator('#search-q').fill('release NOTE');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=release/);
    await waitFor(async () => (await page.locator(`#runs tr[data-workflow-id="${other.workflowId}"]`).count()) === 0 || undefined, PAGE_TIMEOUT_MS, 'the other run filtered out');
    await row.filter({ hasText: 'Draft the release note' }).filter({ hasText: 'drafter' }).waitFor();
    const cells = await row.locator('td').allTextContents();
    expect(cells[5]).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(cells[6]).toBe(`$${state.usage.costUsd.toFixed(4)}`);
  });
  // The fork matched too (its prompt is the original's); searching by agent leaves it out (it has none).
  await page.locator('#search-agent').fill('drafter');
  await page.getByRole('button', { name: 'Search' }).click();
  await waitFor(async () => (await page.locator(`#runs tr[data-workflow-id="${forkId}"]`).count()) === 0 || undefined, PAGE_TIMEOUT_MS, 'the fork filtered out by agent');
  await row.waitFor();
  await page.locator('#search-agent').fill('');
  await page.locator('#search-since').fill('2099-01-01T00:00');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator('#list-empty').waitFor({ state: 'visible' });
  await agents.handle(other.workflowId).abort('test over').catch(() => undefined);
  await page.close();
});

test('a what-if fork from the page: an edited tool result, the recorded answers reused until it, then the two runs side by side', async () => {
  const MODEL = 'views-what-if';
  // Two reads of hello.txt (ids r1, r2), then an answer quoting what each read said.
  h.model.register(MODEL, ({ request }) => {
    const results = (request.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool').map((m) => String(m.content).split('\n')[0]);
    return results.length < 2 ? { toolCalls: [{ id: `r${results.length + 1}`, name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: `saw: ${results.join(' | ')}` };
  });
  const run = await agents.start({ prompt: 'Read it twice', model: MODEL });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: Hello from the workspace | Hello from the workspace' });
  const page = await openPage(`/ui/runs/${encodeURIComponent(run.workflowId)}`);
  await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
  const form = page.locator('#what-if-form');

  // "what if…" on a step opens the form there; bad input is refused with what is wrong, and nothing is forked.
  await page.locator('#timeline li').first().getByRole('button', { name: 'what if…' }).click();
  expect(await form.getByLabel('From step').inputValue()).toBe('1');
  await form.getByLabel('New tool result').fill('EDITED on the page');
  await form.getByRole('button', { name: 'Fork with these changes' }).click();
  await page.getByTestId('what-if-result').filter({ hasText: 'pick the tool call' }).waitFor();
  await form.getByLabel('From step').fill('9999');
  await form.getByLabel('Tool result of').selectOption('r2');
  await form.getByRole('button', { name: 'Fork with these changes' }).click();
  await page.getByTestId('what-if-result').filter({ hasText: /not forked: .*9999/ }).waitFor();
  expect((await get<{ runs: unknown[] }>(`/v1/runs?forkOf=${run.workflowId}`)).runs).toEqual([]);

  // From step 0 with r2's result edited: calls 1 and 2 are answered from the record, only the answer is sent.
  const before = h.model.requests(MODEL).length;
  await form.getByLabel('From step').fill('0');
  await form.getByRole('button', { name: 'Fork with these changes' }).click();
  const forkLink = page.getByTestId('forked').getByRole('link');
  await forkLink.waitFor();
  const forkId = (await forkLink.textContent())!;
  expect(await agents.handle(forkId).result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: Hello from the workspace | EDITED on the page' });
  expect(h.model.requests(MODEL).length - before).toBe(1);
  expect((await apiState(forkId)).usage).toMatchObject({ modelCalls: 3, replayedCalls: 2 });

  // Side by side, from this page and from the fork's (the original on the left): the figures of each run, then every
  // difference by path.
  const sideBySide = async (p: Page) => {
    const table = p.locator('#side-by-side');
    await table.locator('tr[data-field="answer"].differs').filter({ hasText: 'EDITED on the page' }).waitFor();
    expect(await table.locator('thead th').allTextContents()).toEqual(['', run.workflowId, forkId]);
    expect(await table.locator('tr[data-field="of them replayed"] td').allTextContents()).toEqual(['0', '2']);
    await p.locator('#runs-diff tr[data-path="answer"]').waitFor();
  };
  await withScreenshot(page, 'views-what-if.png', async () => {
    await page.getByTestId('forked').getByRole('button', { name: 'compare side by side' }).click();
    await sideBySide(page);
  });
  expect(await page.locator('#compare-origin').isHidden()).toBe(true);
  // Each run's column header links to its page.
  await page.locator('#side-by-side thead').getByRole('link', { name: forkId }).click();
  await page.waitForURL(`${base}/ui/runs/${forkId}`);
  await page.getByRole('button', { name: 'Compare with the run it forked from' }).click();
  await sideBySide(page);
  await page.close();
});

test('the list route refuses a search it cannot run, with the field named; an empty window finds no runs', async () => {
  const res = await fetch(`${base}/v1/runs?since=yesterday`, { headers: authed });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/since/);
  // A window that ends before it starts is a valid search with no runs in it (the document cannot say since <= until).
  const reversed = await fetch(`${base}/v1/runs?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z`, { headers: authed });
  expect([reversed.status, await reversed.json()]).toEqual([200, { runs: [] }]);
});

test("a pattern's children link to their parent, and the parent search finds them", async () => {
  h.model.register('views-stage', () => ({ text: 'stage done' }));
  const pipeline = await h.env.client.workflow.start('agentPipeline', {
    taskQueue: h.taskQueue,
    workflowId: `views-pipeline-${Date.now()}`,
    args: [{ task: 'Ship it', model: 'views-stage', stages: [{ name: 'one', instructions: 'Do one.' }, { name: 'two', instructions: 'Do two.' }] }],
  });
  await pipeline.result();
  const { runs } = await get<{ runs: Array<{ workflowId: string; parentWorkflowId: string | null }> }>(`/v1/runs?parent=${pipeline.workflowId}`);
  expect(runs.map((r) => r.workflowId).sort()).toEqual([`${pipeline.workflowId}/one`, `${pipeline.workflowId}/two`]);
  expect(runs.every((r) => r.parentWorkflowId === pipeline.workflowId)).toBe(true);
  const page = await openPage(`/ui/runs/${encodeURIComponent(`${pipeline.workflowId}/two`)}`);
  await withScreenshot(page, 'views-child.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
    await page.locator('#links li[data-link="parent"]').getByRole('link', { name: pipeline.workflowId }).waitFor();
  });
  await page.close();
});

test('a compacted conversation: the summary is marked in place of the messages it replaced, and compaction is in the activities', async () => {
  h.model.register('views-overflow', ({ request, callIndex }) => {
    if (!request.stream) return { text: 'summary of the early turns' }; // the compaction call
    if (callIndex === 0) return { toolCalls: [{ name: 'listFiles', arguments: {} }] };
    if (!(request.messages as Array<{ content: unknown }>).some((m) => String(m.content).startsWith('Summary of the earlier conversation:'))) {
      return { error: { status: 400, message: 'This model maximum context length is 10 tokens', code: 'context_length_exceeded' } };
    }
    return { text: 'answer after compaction' };
  });
  const run = await agents.start({ prompt: 'Go', model: 'views-overflow' });
  await run.result();
  const page = await openPage(`/ui/runs/${encodeURIComponent(run.workflowId)}`);
  await withScreenshot(page, 'views-compacted.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
    await page.locator('#conversation .msg-compacted').filter({ hasText: 'compacted: summary of earlier messages' }).filter({ hasText: 'summary of the early turns' }).waitFor();
    await page.locator('#activities tr[data-activity="compactContext"]').filter({ hasText: 'completed' }).waitFor();
    // Compaction's own tokens, which the run's usage counts too.
    expect(Number(await page.locator('#activities tr[data-activity="compactContext"] td:nth-child(6)').textContent())).toBeGreaterThan(0);
    await page.locator('#machine path.edge-taken[data-edge$=">COMPACTING"]').first().waitFor();
  });
  await page.close();
});

test('steering: the model in use and its switch, the tool policy marks, and an interrupt sent from the message box', async () => {
  const LONG = 'The long answer goes on and on. '.repeat(300);
  const lastUser = (messages: Array<{ role: string; content: string }>) => [...messages].reverse().find((m) => m.role === 'user')?.content;
  h.model.register('views-steer', ({ request }) => {
    const messages = request.messages as Array<{ role: string; content: string }>;
    if (lastUser(messages) === 'answer briefly') return { text: 'Now doing: answer briefly' };
    if (messages.some((m) => m.role === 'tool')) return { text: LONG, chunkSize: 5, chunkDelayMs: 20 };
    return {
      toolCalls: [
        { id: 'p1', name: 'readFile', arguments: { path: 'hello.txt' } },
        { id: 'p2', name: 'writeFile', arguments: { path: 'policy-deny.txt', content: 'x' } },
        { id: 'p3', name: 'readFile', arguments: { path: 'policy-approve.txt' } },
        { id: 'p4', name: 'readFile', arguments: { path: 'policy-rewrite.txt' } },
      ],
    };
  });
  writeFileSync(path.join(h.workspace, 'policy-approve.txt'), 'read once a person approved\n');
  // `views-gone` has no script: the scripted model answers 404 model_not_found, and the run moves to views-steer.
  const run = await agents.start({ prompt: 'Read the files, then write at length', model: 'views-gone', fallbackModels: ['views-steer'] });
  const page = await openPage(`/ui/runs/${encodeURIComponent(run.workflowId)}`);
  await page.getByTestId('state').filter({ hasText: /^AWAITING_APPROVAL$/ }).waitFor();
  // Send queues: nothing is cut short, the message waits for the next model call.
  await page.locator('#message').fill('keep it plain');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.getByTestId('message-result').filter({ hasText: 'message queued (1 waiting for the next model call)' }).waitFor();
  await agents.handle(run.workflowId).approve({ toolCallId: 'p3', approved: true });

  await withScreenshot(page, 'views-interrupt.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^STREAMING$/ }).waitFor();
    await page.getByTestId('live-text').filter({ hasText: 'The long answer' }).waitFor();
    await page.locator('#message').fill('answer briefly');
    const sent = Date.now();
    await page.getByRole('button', { name: 'Interrupt and send' }).click();
    await page.getByTestId('message-result').filter({ hasText: 'interrupted: the message goes with the next model call' }).waitFor();
    // The provider's stream was cut by the worker, long before the scripted model would have finished it (about 20 s).
    const closedAt = await waitFor(() => h.model.requests('views-steer').find((r) => r.closedByClient)?.closedAt, 10_000, 'the stream to close');
    expect(closedAt - sent).toBeLessThan(10_000);
  });

  await withScreenshot(page, 'views-steering.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
    await page.getByTestId('live-text').filter({ hasText: /^Now doing: answer briefly$/ }).waitFor();
    const counters = (await page.locator('#counters').innerText()).replace(/\s+/g, ' ');
    expect(counters).toContain('model views-steer');
    const switches = page.getByTestId('model-switches');
    await switches.locator('li[data-to="views-steer"]').filter({ hasText: 'views-gone → views-steer' }).filter({ hasText: 'not found' }).waitFor();
    const marks = await page.locator('#tools tbody tr').evaluateAll((rows) =>
      Object.fromEntries(rows.map((r) => [r.getAttribute('data-tool-call-id'), r.querySelector('[data-policy]')?.getAttribute('data-policy') ?? null])),
    );
    expect(marks).toEqual({ p1: null, p2: 'deny', p3: 'approve', p4: 'rewrite' });
    // Ended: nothing to send any more.
    expect(await page.locator('#interrupt').isDisabled()).toBe(true);
  });
  const state = await apiState(run.workflowId);
  expect(state.transitions).toContainEqual(expect.objectContaining({ from: 'STREAMING', to: 'STREAMING', event: 'INTERRUPT' }));
  // The queued message went with the call after the tools, the interrupting one with the call after the interrupt.
  const calls = h.model.requests('views-steer').map((r) => lastUser(r.body.messages));
  expect(calls).toEqual(['Read the files, then write at length', 'keep it plain', 'answer briefly']);
  await page.close();
}, 90_000);
