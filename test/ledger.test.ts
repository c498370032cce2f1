/** The idempotency ledger, alone and behind the executeTool activity. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createActivities, defineTool, RetryableToolError, SqliteToolLedger, UNKNOWN_OUTCOME } from '../src/activities';
import { InflightActivities, isGone, processStart, thisProcess, type ProcessId } from '../src/activities/inflight';
import type { ToolRequest, ToolResult } from '../src/common/chat';
import { openAIClient } from '../src/worker';
import { QuietLogger } from './support/quiet-logger';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'ledger-'));

describe('SqliteToolLedger', () => {
  test('claims a key once, returns the recorded result after, and survives a reopen', () => {
    const file = path.join(tmp(), 'sub', 'ledger.sqlite');
    const ledger = new SqliteToolLedger(file);
    expect(ledger.begin('k1', 'send', '{}')).toEqual({ status: 'new' });
    expect(ledger.begin('k1', 'send', '{}')).toMatchObject({ status: 'unknown' });
    ledger.complete('k1', { ok: true, content: 'sent' });
    expect(ledger.begin('k1', 'send', '{}')).toEqual({ status: 'done', ok: true, content: 'sent' });
    ledger.close();
    const reopened = new SqliteToolLedger(file);
    expect(reopened.begin('k1', 'send', '{}')).toEqual({ status: 'done', ok: true, content: 'sent' });
    expect(reopened.begin('k2', 'send', '{}')).toEqual({ status: 'new' });
    reopened.release('k2');
    expect(reopened.begin('k2', 'send', '{}')).toEqual({ status: 'new' });
    reopened.close();
  });
});

describe('executeTool with a ledger', () => {
  const executions: string[] = [];
  let failNext = false;
  const send = defineTool({
    name: 'send',
    description: 'sends a message',
    parameters: z.object({ to: z.string() }),
    sideEffects: true,
    async execute({ to }, ctx) {
      if (failNext) {
        failNext = false;
        throw new RetryableToolError('mail server busy');
      }
      executions.push(ctx.idempotencyKey);
      return `sent to ${to} #${executions.length}`;
    },
  });
  const look = defineTool({ name: 'look', description: 'reads', parameters: z.object({}), sideEffects: false, execute: async () => `looked ${executions.push('look')}` });
  const ledger = new SqliteToolLedger(path.join(tmp(), 'ledger.sqlite'));
  const activities = createActivities({ openai: openAIClient({ baseURL: 'http://127.0.0.1:9/v1' }), defaultModel: 'x', workspace: tmp(), tools: [send, look], ledger });
  const run = (request: ToolRequest, workflowId = 'wf-1') =>
    new MockActivityEnvironment({ workflowExecution: { workflowId, runId: 'r' } }, { logger: new QuietLogger() }).run<[ToolRequest], ToolResult, typeof activities.executeTool>(activities.executeTool, request);
  const call = (callNumber: number, id = 'c1', name = 'send'): ToolRequest => ({ call: { id, name, arguments: '{"to":"ann"}' }, callNumber });

  beforeEach(() => {
    executions.length = 0;
  });
  afterAll(() => ledger.close());

  test('a retried call returns the recorded result instead of acting again', async () => {
    const first = await run(call(1));
    const retry = await run(call(1));
    expect(first).toEqual({ toolCallId: 'c1', name: 'send', ok: true, content: 'sent to ann #1' });
    expect(retry).toEqual(first);
    expect(executions).toEqual(['wf-1/1/c1']);
  });

  test('another call, or the same call in another run, acts', async () => {
    await run(call(2));
    await run(call(2), 'wf-2');
    expect(executions).toEqual(['wf-1/2/c1', 'wf-2/2/c1']);
  });

  test('a call whose earlier attempt never reported back is not repeated; the model is told', async () => {
    ledger.begin('wf-1/3/c1', 'send', '{"to":"ann"}'); // an attempt that crashed mid-call
    const result = await run(call(3));
    expect(result).toEqual({ toolCallId: 'c1', name: 'send', ok: false, content: UNKNOWN_OUTCOME });
    expect(await run(call(3))).toEqual(result);
    expect(executions).toEqual([]);
  });

  test('a retryable failure releases the claim so the next attempt acts', async () => {
    failNext = true;
    await expect(run(call(4))).rejects.toThrow('mail server busy');
    expect(await run(call(4))).toMatchObject({ ok: true });
    expect(executions).toEqual(['wf-1/4/c1']);
  });

  test('tools without side effects bypass the ledger', async () => {
    await run(call(5, 'c5', 'look'));
    await run(call(5, 'c5', 'look'));
    expect(executions).toEqual(['look', 'look']);
  });
});

describe('InflightActivities (the journal of activity attempts in flight, beside the ledger)', () => {
  const token = (n: number) => new Uint8Array([1, 2, 3, n]);

  test('a dead process of this host leaves orphans; a live one, another host and this process do not', () => {
    const file = path.join(tmp(), 'ledger.sqlite');
    const self = thisProcess();
    // This pid with a start time it never had: the process a restarted container's pid 1 replaced.
    const dead: ProcessId = { ...self, start: '0' };
    const otherHost: ProcessId = { ...dead, host: `${self.host}-elsewhere` };
    const crashed = new InflightActivities(file, dead);
    crashed.begin(token(1), 'wf-1', 'callModel');
    crashed.begin(token(2), 'wf-2', 'executeTool');
    crashed.end(token(2)); // finished before the crash
    new InflightActivities(file, otherHost).begin(token(3), 'wf-3', 'callModel');
    const now = new InflightActivities(file, self);
    now.begin(token(4), 'wf-4', 'callModel');

    expect(now.rows().map((r) => r.workflowId).sort()).toEqual(['wf-1', 'wf-3', 'wf-4']);
    expect(now.orphans()).toEqual([expect.objectContaining({ workflowId: 'wf-1', activityType: 'callModel', owner: `${self.host}/${self.pid}/0`, taskToken: token(1) })]);
    expect(isGone(dead, self)).toBe(true);
    expect(isGone(otherHost, self)).toBe(false);
    expect(isGone(self, self)).toBe(false);
    expect(isGone({ host: self.host, pid: 1, start: processStart(1) }, self)).toBe(false); // init, alive
  });

  test('the start time of a process comes from /proc, whatever its command name holds', () => {
    const start = processStart(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(processStart(process.pid)).toBe(start);
    expect(processStart(2 ** 22 + 1)).toBeUndefined(); // above pid_max: no such process
  });
});
