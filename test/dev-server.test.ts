/** The dev server started by the jest global setup answers and has the project's search attributes. */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { AGENT_STATE_SEARCH_ATTRIBUTE } from '../src/common/constants';
import { ensureSearchAttributes, isServerUp, startDevServer, temporalUiUrl } from '../scripts/lib/dev-server';
import { freePort } from '../scripts/lib/free-port';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

// Wire value of temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD.
const KEYWORD = 2;

let connection: Connection;

beforeAll(async () => {
  connection = await Connection.connect({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
});
afterAll(async () => connection?.close());

test('the test server answers', async () => {
  expect(await isServerUp(testServerAddress())).toBe(true);
});

test('isServerUp is false, and fast, where nothing listens', async () => {
  const started = Date.now();
  expect(await isServerUp('127.0.0.1:1')).toBe(false);
  expect(Date.now() - started).toBeLessThan(2_000);
});

test('AgentState is registered as a Keyword search attribute', async () => {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
  expect(customAttributes?.[AGENT_STATE_SEARCH_ATTRIBUTE]).toBe(KEYWORD);
});

test('ensureSearchAttributes adds the attribute where missing and is idempotent', async () => {
  // A namespace of its own, like an existing db that start-dev did not register the attribute on.
  const namespace = `sa-${Date.now()}`;
  // The CLI fills in the retention period that the raw gRPC call would need as a protobuf Long.
  const cli = await ensureTemporalCli({ quiet: true });
  await promisify(execFile)(cli, ['operator', 'namespace', 'create', '--namespace', namespace, '--address', testServerAddress()]);
  const before = await connection.operatorService.listSearchAttributes({ namespace });
  expect(before.customAttributes?.[AGENT_STATE_SEARCH_ATTRIBUTE]).toBeUndefined();

  await ensureSearchAttributes(testServerAddress(), namespace);
  await ensureSearchAttributes(testServerAddress(), namespace);

  const after = await connection.operatorService.listSearchAttributes({ namespace });
  expect(after.customAttributes?.[AGENT_STATE_SEARCH_ATTRIBUTE]).toBe(KEYWORD);
});

test('a server that exits during startup is started once more, and the error shows the start of its panic', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dev-server-test-'));
  try {
    // A stand-in for the CLI that panics at once and counts its starts.
    const cli = path.join(dir, 'temporal');
    writeFileSync(cli, `#!/bin/sh\necho start >> "${dir}/starts"\necho "panic: listen tcp 127.0.0.1:1: bind: address already in use"\necho "goroutine 1 [running]:"\nexit 2\n`);
    chmodSync(cli, 0o755);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const failure = startDevServer({ cliPath: cli, port: await freePort(), headless: true, dbFile: path.join(dir, 'db.sqlite') });
    await expect(failure).rejects.toThrow(/exited early \(code 2\)[\s\S]*panic: listen tcp 127\.0\.0\.1:1: bind: address already in use/);
    expect(readFileSync(path.join(dir, 'starts'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/exited early .*; starting it once more$/));
  } finally {
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('temporalUiUrl (the demo\'s link): the UI where a running server has it, not a fixed 8233', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dev-server-ui-'));
  // A frontend port whose UI port (+ 1000, start-dev's default) is not 8233 and is free.
  let port = await freePort();
  while (port < 2_000 || port + 1000 > 65_535 || port + 1000 === 8233) port = await freePort();
  const server = await startDevServer({ cliPath: await ensureTemporalCli(), port, uiPort: port + 1000, dbFile: path.join(dir, 'db.sqlite') });
  try {
    const address = `127.0.0.1:${port}`;
    expect(await temporalUiUrl(address, {}, server)).toBe(`http://127.0.0.1:${port + 1000}`);
    // A server someone else started: found where start-dev puts its UI.
    const ui = await temporalUiUrl(address, {});
    expect(ui).toBe(`http://127.0.0.1:${port + 1000}`);
    expect((await fetch(ui!)).ok).toBe(true);
    expect(await temporalUiUrl(address, { TEMPORAL_UI_URL: 'https://temporal.example.com/' })).toBe('https://temporal.example.com');
    expect(await temporalUiUrl(address, { TEMPORAL_UI_PORT: '9999' })).toBe('http://127.0.0.1:9999');
    // The test server is headless: no UI to link to, and no made-up link.
    expect(await temporalUiUrl(testServerAddress(), {})).toBeUndefined();
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
