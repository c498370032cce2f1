/** The dev server started by the jest global setup answers and has the project's search attributes. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { AGENT_STATE_SEARCH_ATTRIBUTE } from '../src/common/constants';
import { ensureSearchAttributes, isServerUp } from '../scripts/lib/dev-server';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { testServerAddress } from './support/temporal';

// Wire value of temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD.
const KEYWORD = 2;

let connection: Connection;

beforeAll(async () => {
  connection = await Connection.connect({ address: testServerAddress() });
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
