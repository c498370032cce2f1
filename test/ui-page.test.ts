/**
 * The gateway's web page (/ui) in a real headless Chromium, on a real worker, dev server and gateway: the token
 * form, the list of runs, a run's page while it streams, while it waits for approval, approved with edited
 * arguments, aborted, with an approval reminder, and after the gateway went away and came back while the run moved on (the page's status is
 * the run's, not the one it had when the connection broke). Screenshots go to test-results/ui/page-*.png.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AgentClient } from '../src/client';
import type { RunStateView } from '../src/common/messages';
import { buildGateway } from '../src/gateway';
import { httpTarget, liveStream, MemoryHub, type PublishTarget } from '../src/stream';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { launchChromium, withScreenshot } from './support/browser';

const TOKEN = 'ui-page-test-token';
const PAGE_TIMEOUT_MS = 20_000;
let h: AgentHarness;
let agents: AgentClient;
let gateway: FastifyInstance;
let port = 0;
let base: string;
/** A second gateway with a stream channel, which the worker publishes to: pages on it follow runs by push. */
let live: FastifyInstance;
let liveBase: string;
/** The requests `live` got: the run's state, and event streams opened with and without Last-Event-ID. */
const liveRequests: Array<{ url: string; lastEventId?: string }> = [];
/** The connections of the event streams `live` serves, to cut (the worker's publishing connection is left alone). */
const liveStreams = new Set<Socket>();
let browser: Browser;
let context: BrowserContext;

async function startGateway(): Promise<void> {
  gateway = buildGateway({ agents, token: TOKEN, heartbeatMs: 1_000, pollIntervalMs: 100 });
  await gateway.listen({ port, host: '127.0.0.1' });
  port = (gateway.server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  let publishTo: PublishTarget | undefined;
  h = await startAgentHarness(undefined, { stream: liveStream({ publish: (id, e) => publishTo!.publish(id, e) }, { warn: () => undefined, info: () => undefined }) });
  agents = new AgentClient(h.env.client, h.taskQueue);
  live = buildGateway({ agents, token: TOKEN, heartbeatMs: 1_000, pollIntervalMs: 100, stream: new MemoryHub() });
  live.addHook('onRequest', async (request) => {
    const header = request.headers['last-event-id'];
    liveRequests.push({ url: request.url, lastEventId: Array.isArray(header) ? header[0] : header });
    if (request.url.endsWith('/events')) liveStreams.add(request.raw.socket);
  });
  await live.listen({ port: 0, host: '127.0.0.1' });
  liveBase = `http://127.0.0.1:${(live.server.address() as AddressInfo).port}`;
  publishTo = httpTarget(liveBase, TOKEN);
  // Text streamed slowly enough to be seen streaming, then a write that needs a person's approval; once the write
  // is done (a tool message in the conversation), the answer.
  h.model.register('page-writer', ({ request }) =>
    !(request.messages as Array<{ role: string }>).some((m) => m.role === 'tool')
      ? { text: 'I will write the draft to out.txt now. '.repeat(4), chunkSize: 6, chunkDelayMs: 120, toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'draft by the model' } }] }
      : { text: 'The file is written.' },
  );
  h.model.register('page-pushed', () => ({ text: Array.from({ length: 90 }, (_, i) => `word${i} `).join(''), chunkSize: 4, chunkDelayMs: 50 }));
  // A long stream to abort in the middle of.
  h.model.register('page-talker', () => ({ text: 'One more sentence about durable agents. '.repeat(60), chunkSize: 8, chunkDelayMs: 150 }));
  await startGateway();
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await live?.close();
  await h?.close();
});

const authed = { authorization: `Bearer ${TOKEN}` };

async function startRun(input: object): Promise<string> {
  const res = await fetch(`${base}/v1/runs`, { method: 'POST', headers: { ...authed, 'content-type': 'application/json' }, body: JSON.stringify(input) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { workflowId: string }).workflowId;
}

const apiState = async (id: string): Promise<RunStateView> => (await (await fetch(`${base}/v1/runs/${encodeURIComponent(id)}`, { headers: authed })).json()) as RunStateView;

/** A page that has been given the token through the form, as a person would. */
async function openPage(url: string, origin = base): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}${url}`);
  await page.locator('#token').fill(TOKEN);
  await page.getByRole('button', { name: 'Use token' }).click();
  return page;
}

/** The page shows `state`, and so does the run's state endpoint: the page does not drift from the run. */
async function expectState(page: Page, id: string, state: string): Promise<void> {
  await page.getByTestId('state').filter({ hasText: new RegExp(`^${state}$`) }).waitFor();
  expect((await apiState(id)).state).toBe(state);
}

/** A run waiting for approval of its write, and its page, live. */
async function pageOfWaitingRun(): Promise<{ id: string; page: Page }> {
  const id = await startRun({ prompt: 'Write a draft to out.txt', model: 'page-writer', approval: { tools: ['writeFile'] } });
  const page = await openPage(`/ui/runs/${encodeURIComponent(id)}`);
  await expectState(page, id, 'AWAITING_APPROVAL');
  await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
  return { id, page };
}

test("an approval wait's reminder shows as a note on the page (pushed through the stream channel), then the run rejects the call and goes on", async () => {
  const id = await startRun({
    prompt: 'Write a draft to out.txt',
    model: 'page-writer',
    approval: { tools: ['writeFile'], onTimeout: 'reject', reminderAt: 0.5 },
    limits: { approvalTimeoutMs: 6_000 },
  });
  const page = await openPage(`/ui/runs/${encodeURIComponent(id)}`, liveBase);
  await expectState(page, id, 'AWAITING_APPROVAL');
  const note = page.locator('#approval-reminder');
  expect(await note.isHidden()).toBe(true);
  await withScreenshot(page, 'page-approval-reminder.png', async () => {
    await note.filter({ hasText: 'rejects the calls still waiting and goes on' }).waitFor();
  });
  expect(await note.textContent()).toMatch(/^Reminder: still waiting since .*; at .* the run rejects the calls still waiting and goes on\.$/);
  expect((await apiState(id)).approvalReminder).toMatchObject({ onTimeout: 'reject', toolCallIds: ['w1'] });
  await expectState(page, id, 'COMPLETED');
  expect(await note.isHidden()).toBe(true);
  await page.close();
});

test('the page is served without the token, holds no data, and forbids inline and foreign scripts; the API still needs the token', async () => {
  const page = await fetch(`${base}/ui/runs/some-run`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
  expect(await page.text()).toBe(readFileSync(path.resolve(__dirname, '../src/gateway/ui/index.html'), 'utf8'));
  expect((await fetch(`${base}/ui/assets/app.js`)).headers.get('content-type')).toMatch(/^text\/javascript/);
  expect((await fetch(`${base}/v1/runs`)).status).toBe(401);
  expect((await fetch(`${base}/ui/anything-else`)).status).toBe(401);
});

test('a run streams, waits for approval, is approved with edited arguments from the page, and completes with them', async () => {
  const id = await startRun({ prompt: 'Write a draft to out.txt', model: 'page-writer', approval: { tools: ['writeFile'] } });

  // The list, behind the token form.
  const list = await openPage('/ui');
  const row = list.locator(`tr[data-workflow-id="${id}"]`);
  await row.waitFor();
  await withScreenshot(list, 'page-list.png', async () => {
    await row.getByRole('link', { name: id }).click();
    await list.waitForURL(`${base}/ui/runs/${id}`);
  });
  const page = list;

  await withScreenshot(page, 'page-streaming.png', async () => {
    await expectState(page, id, 'STREAMING');
    // Part of the text is on the page before the call has ended.
    await waitFor(async () => ((await page.getByTestId('live-text').textContent())?.length ?? 0) > 10 || undefined, PAGE_TIMEOUT_MS, 'streamed text');
    expect((await apiState(id)).state).toBe('STREAMING');
  });

  await withScreenshot(page, 'page-awaiting-approval.png', async () => {
    await expectState(page, id, 'AWAITING_APPROVAL');
    await page.locator('.approval[data-tool-call-id="w1"]').waitFor();
    expect(await page.getByTestId('live-text').textContent()).toBe('I will write the draft to out.txt now. '.repeat(4));
  });

  // A person edits the arguments and explains why.
  const card = page.locator('.approval[data-tool-call-id="w1"]');
  const edited = JSON.stringify({ path: 'out.txt', content: 'edited by a person' }, null, 2);
  await card.getByRole('textbox', { name: 'arguments of writeFile' }).fill('{ "path": 42 }');
  await card.getByRole('button', { name: 'Approve' }).click();
  // The schema check names the field, and the run still waits.
  await card.locator('.error').filter({ hasText: /path/ }).waitFor();
  expect((await apiState(id)).state).toBe('AWAITING_APPROVAL');
  await card.getByRole('textbox', { name: 'arguments of writeFile' }).fill(edited);
  await card.getByRole('textbox', { name: 'feedback on writeFile' }).fill('keep it short');

  await withScreenshot(page, 'page-after-approval.png', async () => {
    await card.getByRole('button', { name: 'Approve' }).click();
    await expectState(page, id, 'COMPLETED');
    const tool = page.locator('#tools tr[data-tool-call-id="w1"]');
    await tool.filter({ hasText: 'edited' }).waitFor();
    await tool.filter({ hasText: 'ok' }).waitFor();
    await page.getByTestId('live-text').filter({ hasText: 'The file is written.' }).waitFor();
    await page.locator('#timeline li').filter({ hasText: 'AWAITING_APPROVAL → TOOL_EXECUTING' }).waitFor();
  });
  expect(readFileSync(path.join(h.workspace, 'out.txt'), 'utf8')).toBe('edited by a person');
  // The feedback typed on the page reaches the model, after the tool's own output.
  const told = h.model.requests('page-writer').at(-1)!.body.messages as Array<{ role: string; content: string }>;
  expect(told.at(-1)).toMatchObject({ role: 'user', content: expect.stringMatching(/^- writeFile \(call w1\): approved with edited arguments; .*\. Feedback: keep it short$/m) });
  expect(told.at(-2)).toEqual({ role: 'tool', tool_call_id: 'w1', content: 'wrote 18 bytes to out.txt' });
  const state = await apiState(id);
  expect(state.pendingApproval).toEqual([]);
  expect(state.recentToolCalls[0]).toMatchObject({ name: 'writeFile', edited: true, ok: true });
  expect(await page.locator('#pause').isDisabled()).toBe(true);
  await page.close();
});

test("a call rejected from the page stays in the tool table, marked rejected, with what the model was told", async () => {
  const { id, page } = await pageOfWaitingRun();
  const card = page.locator('.approval[data-tool-call-id="w1"]');
  await card.getByRole('textbox', { name: 'feedback on writeFile' }).fill('not now');
  await withScreenshot(page, 'page-after-rejection.png', async () => {
    await card.getByRole('button', { name: 'Reject' }).click();
    await expectState(page, id, 'COMPLETED');
    const tool = page.locator('#tools tr[data-tool-call-id="w1"]');
    await tool.locator('td[data-rejected="true"]').filter({ hasText: /^rejected$/ }).waitFor();
    await tool.filter({ hasText: 'The user rejected this call' }).waitFor();
  });
  expect((await apiState(id)).recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'w1', rejected: true, ok: false })]);
  await page.close();
});

test('the counters say what happened: a run refused for unknown tools counts no model call, one refused for bad input shows no limits', async () => {
  const counters = async (page: Page) => (await page.locator('#counters').innerText()).replace(/\s+/g, ' ');
  const unknown = await agents.start({ prompt: 'Use it', model: 'page-writer', tools: ['bogusTool'] });
  await unknown.result().catch(() => undefined);
  const page = await openPage(`/ui/runs/${encodeURIComponent(unknown.workflowId)}`);
  await expectState(page, unknown.workflowId, 'FAILED');
  await withScreenshot(page, 'page-unknown-tools.png', async () => {
    expect(await counters(page)).toContain('model calls 0 loops 0 / 50 tool calls 0 / 100');
    await page.locator('#reason').filter({ hasText: /^Reason: no model call was made: unknown tools: bogusTool;/ }).waitFor();
  });

  // The client refuses bad input before starting; a raw start gets through to the workflow, which refuses it.
  const refused = await h.start({ prompt: '' });
  await refused.result().catch(() => undefined);
  await page.goto(`${base}/ui/runs/${encodeURIComponent(refused.workflowId)}`);
  await expectState(page, refused.workflowId, 'FAILED');
  await withScreenshot(page, 'page-input-refused.png', async () => {
    const text = await counters(page);
    expect(text).toContain('model calls 0 loops 0 tool calls 0');
    expect(text).toContain('limits none: the input was refused');
    expect(text).not.toMatch(/\d \/ \d/);
  });
  await page.close();
});

test('abort from the page: the run ends ABORTED with the reason, and the page keeps the text produced so far', async () => {
  const id = await startRun({ prompt: 'Talk for a while', model: 'page-talker' });
  const page = await openPage(`/ui/runs/${encodeURIComponent(id)}`);
  await expectState(page, id, 'STREAMING');
  await waitFor(async () => ((await page.getByTestId('live-text').textContent())?.length ?? 0) > 40 || undefined, PAGE_TIMEOUT_MS, 'streamed text');

  await withScreenshot(page, 'page-aborted.png', async () => {
    await page.locator('#abort-reason').fill('enough, thanks');
    await page.getByRole('button', { name: 'Abort' }).click();
    await expectState(page, id, 'ABORTED');
    await page.locator('#reason').filter({ hasText: 'enough, thanks' }).waitFor();
    expect(await page.locator('#abort').isDisabled()).toBe(true);
    expect((await page.getByTestId('live-text').textContent())?.length).toBeGreaterThan(40);
  });
  const result = await agents.handle(id).result();
  expect(result.status).toBe('ABORTED');
  expect(result.partialText?.length).toBeGreaterThan(40);
  await page.close();
});

test('the gateway goes away while the run moves on: the page says it is offline, then reconnects and shows the run as it is', async () => {
  const { id, page } = await pageOfWaitingRun();

  await gateway.close();
  await page.getByTestId('connection').filter({ hasText: 'offline' }).waitFor();
  // Decided elsewhere (another service, the CLI) while the page cannot reach the gateway.
  await agents.handle(id).approve({ toolCallId: 'w1', approved: true });
  expect((await agents.handle(id).result()).status).toBe('COMPLETED');
  await page.getByTestId('updated').filter({ hasText: 'cannot reach the gateway' }).waitFor();
  // What the page shows while offline is marked stale; it still says the last state it saw.
  expect(await page.getByTestId('state').textContent()).toBe('AWAITING_APPROVAL');

  await withScreenshot(page, 'page-reconnected.png', async () => {
    await startGateway();
    await expectState(page, id, 'COMPLETED');
    await page.getByTestId('connection').filter({ hasText: /live|ended/ }).waitFor();
    expect(await page.locator('#approvals').isHidden()).toBe(true);
    await page.getByTestId('live-text').filter({ hasText: 'The file is written.' }).waitFor();
  });
  await page.close();
});

test('the sign-in page shows no empty connection pill, and /favicon.ico needs no token', async () => {
  const page = await context.newPage();
  const favicons: number[] = [];
  page.on('response', (res) => res.url().endsWith('/favicon.ico') && favicons.push(res.status()));
  await page.goto(`${base}/ui`);
  await page.locator('#token').waitFor();
  expect(await page.getByTestId('connection').isVisible()).toBe(false);
  const favicon = await fetch(`${base}/favicon.ico`);
  expect(favicon.status).toBe(204);
  expect(favicons.every((status) => status === 204)).toBe(true);
  // Once the page talks to the gateway, the pill is there.
  await page.locator('#token').fill(TOKEN);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
  await page.close();
});

test('an unknown run: the page says so and its controls are off', async () => {
  const page = await openPage('/ui/runs/no-such-run');
  await withScreenshot(page, 'page-unknown-run.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^unknown run$/ }).waitFor();
    for (const id of ['#pause', '#resume', '#abort', '#abort-reason']) expect([id, await page.locator(id).isDisabled()]).toEqual([id, true]);
  });
  await page.close();
});

test('offline: one notice however many polls fail, and errors of requests that got no answer go once the gateway answers', async () => {
  const { id, page } = await pageOfWaitingRun();
  const card = page.locator('.approval[data-tool-call-id="w1"]');

  await gateway.close();
  await page.getByTestId('connection').filter({ hasText: 'offline' }).waitFor();
  await card.getByRole('button', { name: 'Approve' }).click();
  await card.locator('.error').filter({ hasText: /\S/ }).waitFor();
  // Several reconnects of the event stream (1 s apart) fail: the notice is said once.
  await page.waitForTimeout(6_500);
  const updated = (await page.getByTestId('updated').textContent()) ?? '';
  expect(updated.match(/cannot reach the gateway/g)).toHaveLength(1);
  expect(updated).toMatch(/^as of /);

  await withScreenshot(page, 'page-back-online.png', async () => {
    await startGateway();
    await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
    await page.getByTestId('updated').filter({ hasNotText: 'cannot reach' }).waitFor();
    // The run still waits (nobody approved): the same card, without the stale error.
    expect(await card.locator('.error').textContent()).toBe('');
    expect((await apiState(id)).state).toBe('AWAITING_APPROVAL');
  });
  await card.getByRole('button', { name: 'Approve' }).click();
  await expectState(page, id, 'COMPLETED');
  await page.close();
});

test('the list says its order, open runs first then the most recently closed, and shows it', async () => {
  h.model.register('page-quick', () => ({ text: 'done' }));
  const open = await startRun({ prompt: 'Write a draft to out.txt', model: 'page-writer', approval: { tools: ['writeFile'] } });
  const closed = await startRun({ prompt: 'quick', model: 'page-quick' });
  await agents.handle(closed).result();
  const page = await openPage('/ui');
  await page.getByText('open runs first, then the most recently closed').waitFor();
  // The visibility store catches up with the close after a moment.
  await page.locator(`tr[data-workflow-id="${closed}"] td:nth-child(5)`).filter({ hasText: /\d/ }).waitFor();
  const ids = await page.locator('#runs tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-workflow-id')));
  expect(ids.indexOf(open)).toBeGreaterThanOrEqual(0);
  // Started later, closed: after the open one, which "newest first" would not put it.
  expect(ids.indexOf(open)).toBeLessThan(ids.indexOf(closed));
  const closedCells = await page.locator('#runs tbody tr td:nth-child(5)').allTextContents();
  const firstClosed = closedCells.findIndex((c) => c !== '');
  expect(closedCells.slice(firstClosed).every((c) => c !== '')).toBe(true);
  await agents.handle(open).abort('test over');
  await page.close();
});

test('a page on another origin follows a run with the snippet of docs/gateway.md: CORS and a stream token, in Chromium', async () => {
  h.model.register('page-spa', () => ({ text: 'Followed from another origin.', chunkSize: 5, chunkDelayMs: 50 }));
  const docs = readFileSync(path.resolve(__dirname, '../docs/gateway.md'), 'utf8');
  const snippet = /## Browsers on another origin[\s\S]*?```js\n([\s\S]*?)```/.exec(docs)![1];
  let script = '';
  const spa = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>spa</title><script src="/spa.js"></script>');
    else if (req.url === '/spa.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => spa.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(spa.address() as AddressInfo).port}`;
  const cors = buildGateway({ agents, token: TOKEN, corsOrigins: [origin], pollIntervalMs: 100 });
  await cors.listen({ port: 0, host: '127.0.0.1' });
  const gatewayUrl = `http://127.0.0.1:${(cors.server.address() as AddressInfo).port}`;
  const page = await context.newPage();
  try {
    const id = await startRun({ prompt: 'hi', model: 'page-spa' });
    script = snippet
      .replace("const GATEWAY = 'https://agents.example.com';", `const GATEWAY = ${JSON.stringify(gatewayUrl)}; const gatewayToken = ${JSON.stringify(TOKEN)};`)
      .replace("follow('agent-1a2b3c4d5e6f', (type, data) => console.log(type, data));", `window.followed = []; follow(${JSON.stringify(id)}, (type, data) => window.followed.push({ type, data }));`);
    expect(script).toContain(gatewayUrl);
    expect(script).toContain('window.followed');
    await page.goto(`${origin}/`);
    const followed = await waitFor(
      async () => {
        const events = await page.evaluate(() => (globalThis as { followed?: Array<{ type: string; data: any }> }).followed ?? []);
        return events.some((e) => e.type === 'end') ? events : undefined;
      },
      PAGE_TIMEOUT_MS,
      'the end event in the other origin\'s page',
    );
    expect(followed.filter((e) => e.type === 'text').map((e) => e.data.text).join('')).toBe('Followed from another origin.');
    expect(followed.at(-1)!.data.state.answer).toBe('Followed from another origin.');
    // The gateway built without corsOrigins is closed to that page.
    const blocked = await page.evaluate(async (url) => fetch(url).then(() => 'allowed', (err: Error) => err.message), `${base}/healthz`);
    expect(blocked).not.toBe('allowed');
  } finally {
    await page.close();
    await cors.close();
    spa.close();
  }
});

test('a page follows a run by push: the text grows while it streams, no state polling, and reconnects repeat nothing', async () => {
  const answer = Array.from({ length: 90 }, (_, i) => `word${i} `).join('');
  const res = await fetch(`${liveBase}/v1/runs`, { method: 'POST', headers: { ...authed, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'talk', model: 'page-pushed' }) });
  const id = ((await res.json()) as { workflowId: string }).workflowId;
  const page = await openPage(`/ui/runs/${encodeURIComponent(id)}`, liveBase);
  const liveText = async () => (await page.getByTestId('live-text').textContent()) ?? '';
  const stateReads = () => liveRequests.filter((r) => r.url === `/v1/runs/${id}`).length;

  await withScreenshot(page, 'page-pushed-streaming.png', async () => {
    await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
    const first = await waitFor(async () => ((await liveText()).length > 40 ? await liveText() : undefined), PAGE_TIMEOUT_MS, 'streamed text');
    // The events the stream replays on attach (the run's transitions) each ask for the state once, and a read asked
    // for while one is in flight follows it: under load the last of them can still be under way. Once reads have
    // been quiet for a second, while one model call streams and nothing else happens, the page reads the state not
    // once (a page that polled, every second or more often, never gets that quiet second).
    const reads = await waitFor(
      async () => {
        const before = stateReads();
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return stateReads() === before ? before : undefined;
      },
      PAGE_TIMEOUT_MS,
      'the state reads of the attach to settle',
    );
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const later = await liveText();
    expect(later.length).toBeGreaterThan(first.length);
    expect(answer.startsWith(later)).toBe(true);
    expect(stateReads()).toBe(reads);
    expect((await apiState(id)).state).toBe('STREAMING');
  });

  // Connections cut twice while the text streams: the page resumes after its last event each time.
  for (let cut = 0; cut < 2; cut++) {
    const resumed = liveRequests.filter((r) => r.url.endsWith('/events') && r.lastEventId).length;
    for (const socket of liveStreams) socket.destroy();
    liveStreams.clear();
    await waitFor(() => liveRequests.filter((r) => r.url.endsWith('/events') && r.lastEventId).length > resumed || undefined, PAGE_TIMEOUT_MS, 'a resumed stream');
    expect(answer.startsWith(await liveText())).toBe(true);
  }

  await withScreenshot(page, 'page-pushed-done.png', async () => {
    await page.getByTestId('state').filter({ hasText: /^COMPLETED$/ }).waitFor();
    await page.getByTestId('connection').filter({ hasText: 'ended' }).waitFor();
    expect(await liveText()).toBe(answer);
  });
  await page.close();
});
