/**
 * Search attributes on a namespace that lacks them (a fresh one, as on a new cluster or Temporal Cloud): a worker
 * refuses to start, naming what is missing and how to add it; `agent setup-cluster` registers them, idempotently.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { AGENT_STATE_SEARCH_ATTRIBUTE } from '../src/common/constants';
import { assertSearchAttributes, MissingSearchAttributesError } from '../src/config/search-attributes';
import { createAgentWorker } from '../src/worker';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

let connection: Connection;
const namespace = `setup-${Date.now()}`;

beforeAll(async () => {
  connection = await Connection.connect({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
  const cli = await ensureTemporalCli({ quiet: true });
  await promisify(execFile)(cli, ['operator', 'namespace', 'create', '--namespace', namespace, '--address', testServerAddress()]);
  // The new namespace reaches the frontend's cache some seconds after it is stored.
  for (let deadline = Date.now() + 30_000; ; ) {
    const ok = await connection.operatorService.listSearchAttributes({ namespace }).then(() => true, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`namespace ${namespace} not usable after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}, 60_000);
afterAll(async () => connection?.close());

const agentCli = (...argv: string[]) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/bin/agent.ts', ...argv], {
    cwd: path.resolve(__dirname, '..'),
    env: { ...process.env, TEMPORAL_ADDRESS: testServerAddress(), TEMPORAL_NAMESPACE: namespace },
  });

test('a worker on a namespace without AgentState and AgentTenant fails at start, naming them and the commands that add them', async () => {
  const started = createAgentWorker({ connection: { address: testServerAddress() }, namespace, ledgerFile: ':memory:' });
  await expect(started).rejects.toThrow(MissingSearchAttributesError);
  await expect(started).rejects.toThrow(`namespace ${namespace} lacks the search attributes agent runs need: ${AGENT_STATE_SEARCH_ATTRIBUTE} (Keyword), AgentTenant (Keyword)`);
  await expect(started).rejects.toThrow('agent setup-cluster');
  await expect(started).rejects.toThrow(`tcld namespace search-attributes add --namespace ${namespace}.<account-id> --search-attribute "AgentState=Keyword"`);
  await expect(started).rejects.toThrow(`tcld namespace search-attributes add --namespace ${namespace}.<account-id> --search-attribute "AgentTenant=Keyword"`);
});

test('agent setup-cluster registers the search attributes once, then reports nothing to do', async () => {
  const first = await agentCli('setup-cluster');
  expect(first.stdout).toBe(`namespace ${namespace}: added AgentState (Keyword), AgentTenant (Keyword)\n`);
  expect(await assertSearchAttributes(connection.operatorService, namespace)).toBe(true);

  const again = await agentCli('setup-cluster', '--json');
  expect(JSON.parse(again.stdout)).toEqual({ namespace, added: [], present: ['AgentState', 'AgentTenant'] });
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  expect(customAttributes?.[AGENT_STATE_SEARCH_ATTRIBUTE]).toBe(2); // INDEXED_VALUE_TYPE_KEYWORD
}, 60_000);
