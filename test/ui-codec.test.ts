/**
 * Issue #6 end to end: in a real headless Chromium, the Temporal Web UI of a dev server started with
 * `--ui-codec-endpoint` shows an encrypted run's prompt decrypted only after the user has signed in at the codec
 * server, and shows ciphertext again after signing out. The browser is set up as docs/ui.md tells an operator: the
 * UI's Codec Server settings, with "include cross-origin credentials" on (the dev server has no flag for it).
 * The worker is the production one (`createAgentWorker`) with AGENT_ENCRYPTION_KEYS; the tests run in order, as the
 * user would. Screenshots go to test-results/ui/.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { startDevServer, type DevServerHandle } from '../scripts/lib/dev-server';
import { AgentClient } from '../src/client';
import { createDataConverter } from '../src/codec';
import { codecSettings, workerConfig } from '../src/config';
import { createCodecServer } from '../src/codec/server';
import { SESSION_COOKIE } from '../src/codec/session';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { createAgentWorker, type AgentWorker } from '../src/worker';
import { quietRuntime } from './support/agent-harness';
import { freePort } from '../scripts/lib/free-port';
import { launchChromium, SHOTS, UI_TIMEOUT_MS, withScreenshot } from './support/browser';

const TOKEN = randomBytes(24).toString('hex');
const PROMPT_SECRET = `PROMPT-${randomUUID()}`;
const TEST_TIMEOUT_MS = 120_000;

let dir: string;
let model: ScriptedModel;
let codec: FastifyInstance;
let codecUrl: string;
let server: DevServerHandle;
let agent: AgentWorker;
let running: Promise<void>;
let agents: AgentClient;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let runUrl: string;
/** The codec session cookie in the browser; cookies are per host, not per port, so the UI's own `_csrf` is there too. */
const sessionCookies = async () => (await context.cookies(codecUrl)).filter((c) => c.name === SESSION_COOKIE);
/** What the codec server answered the UI's decode requests, and whether each carried the session cookie. */
const decodes: { status: number; session: boolean }[] = [];

beforeAll(async () => {
  quietRuntime();
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-ui-codec-'));
  model = await startScriptedModel();
  model.register('answer', [{ text: 'done' }]);
  mkdirSync(path.join(dir, 'ws'));
  const env: NodeJS.ProcessEnv = {
    TEMPORAL_TASK_QUEUE: `ui-codec-${randomUUID()}`,
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'scripted',
    AGENT_WORKSPACE: path.join(dir, 'ws'),
    AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(dir, 'blobs'),
    AGENT_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  };
  // The UI's origin is 127.0.0.1 and so is the codec server's: one site, so the SameSite=Strict cookie travels.
  const uiPort = await freePort();
  const ui = `http://127.0.0.1:${uiPort}`;
  codec = createCodecServer({ codecs: createDataConverter(codecSettings(env)).payloadCodecs!, token: TOKEN, allowedOrigins: [ui] });
  codec.addHook('onResponse', async (req, reply) => {
    if (req.method === 'POST' && req.url.includes('/decode')) decodes.push({ status: reply.statusCode, session: (req.headers.cookie ?? '').includes(`${SESSION_COOKIE}=`) });
  });
  codecUrl = await codec.listen({ port: 0, host: '127.0.0.1' });
  server = await startDevServer({
    port: await freePort(),
    uiPort,
    dbFile: path.join(dir, 'dev.sqlite'),
    logFile: path.join(dir, 'server.log'),
    uiCodecEndpoint: codecUrl,
  });
  env.TEMPORAL_ADDRESS = server.address;
  agent = await createAgentWorker({ config: workerConfig(env) });
  running = agent.run();
  agents = await AgentClient.connect(
    { address: server.address, namespace: 'default', taskQueue: env.TEMPORAL_TASK_QUEUE! },
    { dataConverter: createDataConverter(codecSettings(env)) },
  );
  const run = await agents.start({ prompt: `Say done. ${PROMPT_SECRET}`, model: 'answer' });
  expect((await run.result()).status).toBe('COMPLETED');
  runUrl = `${ui}/namespaces/default/workflows/${encodeURIComponent(run.workflowId)}`;

  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  // Only the UI and the codec server: the UI's news feed and anything else off this machine are refused.
  await context.route((url) => !url.href.startsWith(ui) && !url.href.startsWith(codecUrl), (route) => route.abort());
  page = await context.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  agent?.shutdown();
  await running;
  await agents?.close();
  await server?.stop();
  await codec?.close();
  await model?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The run's page, once the UI has had the codec server's answer (the top bar's codec status leaves "configured"). */
async function openRun(expected: 'success' | 'error'): Promise<void> {
  decodes.length = 0;
  await page.goto(runUrl);
  await page.getByTestId(`data-encoder-status-${expected}`).waitFor();
}

test('the UI\'s Codec Server settings take the endpoint with "include cross-origin credentials" on', () =>
  withScreenshot(page, 'codec-settings.png', async () => {
    await page.goto(runUrl);
    // The top bar's codec button; its test id says the status (configured, error, success).
    await page.locator('[data-testid^="data-encoder-status"]').click();
    await page.getByTestId('use-local-endpoint-input').check();
    await page.locator('#data-encoder-endpoint-input').fill(codecUrl);
    // A switch: the input is visually hidden under its label, so click the label as a person would.
    const includeCredentials = page.getByRole('switch', { name: 'Include cross-origin credentials' });
    await page.getByText('Include cross-origin credentials', { exact: true }).click();
    expect(await includeCredentials.isChecked()).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, 'codec-settings-dialog.png') });
    await page.getByRole('button', { name: 'Apply' }).click();
    // The dialog keeps its settings in this browser's localStorage, JSON-encoded.
    const stored = await page.evaluate(() => {
      const { localStorage } = globalThis as unknown as { localStorage: { getItem(key: string): string | null } };
      return ['endpoint', 'includeCredentials', 'overrideRemoteCodecConfiguration'].map((key) => localStorage.getItem(key));
    });
    expect(stored).toEqual([JSON.stringify(codecUrl), 'true', 'true']);
  }), TEST_TIMEOUT_MS);

test("signed out, the run's page shows the prompt encrypted", () =>
  withScreenshot(page, 'codec-signed-out.png', async () => {
    await openRun('error');
    expect(await page.content()).not.toContain(PROMPT_SECRET);
    expect(decodes.length).toBeGreaterThan(0);
    expect(decodes.every((d) => d.status === 401 && !d.session)).toBe(true);
  }), TEST_TIMEOUT_MS);

test('a wrong token at the sign-in page is refused and sets no cookie', () =>
  withScreenshot(page, 'codec-login-refused.png', async () => {
    await page.goto(`${codecUrl}/login`);
    await page.getByLabel('Codec server token').fill(`${TOKEN}x`);
    const response = page.waitForResponse((r) => r.url() === `${codecUrl}/login` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect((await response).status()).toBe(401);
    await page.getByRole('alert').getByText('Wrong token').waitFor();
    expect(await sessionCookies()).toEqual([]);
  }), TEST_TIMEOUT_MS);

test("after signing in at the codec server, the run's page shows the prompt decrypted", async () => {
  await withScreenshot(page, 'codec-login.png', async () => {
    await page.goto(`${codecUrl}/login`);
    await page.getByLabel('Codec server token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    const [cookie] = await sessionCookies();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie.value).not.toContain(TOKEN);
  });
  await withScreenshot(page, 'codec-decoded.png', async () => {
    await openRun('success');
    // The Input card: the workflow's argument, decrypted by the codec server, as JSON.
    await page.getByText(PROMPT_SECRET).first().waitFor();
    expect(decodes.length).toBeGreaterThan(0);
    expect(decodes.every((d) => d.status === 200 && d.session)).toBe(true);
  });
}, TEST_TIMEOUT_MS);

test("after signing out, the run's page shows the prompt encrypted again", () =>
  withScreenshot(page, 'codec-signed-out-again.png', async () => {
    await page.goto(`${codecUrl}/logout`);
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    expect(await sessionCookies()).toEqual([]);
    await openRun('error');
    expect(await page.content()).not.toContain(PROMPT_SECRET);
  }), TEST_TIMEOUT_MS);
