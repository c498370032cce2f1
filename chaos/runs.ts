/**
 * Starts the agent runs, a few at a time, and waits for each outcome through server restarts: a client call
 * that fails because the server is away is tried again until the deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type Client } from '@temporalio/client';
import { failureReason } from '../src/client';
import { WORKFLOW_TYPE } from '../src/common/constants';
import type { AgentRunResult } from '../src/common/messages';
import { chaosPrompt, expectedAnswer } from './script';

export interface RunOutcome {
  runId: string;
  token: string;
  status: 'completed' | 'failed' | 'stuck' | 'not-started';
  answer?: string | null;
  correct?: boolean;
  reason?: string;
  durationMs?: number;
}

export interface RunPoolOptions {
  client: Client;
  taskQueue: string;
  runIds: string[];
  tokenOf: (runId: string) => string;
  concurrency: number;
  deadline: number;
  /** Given to every run as its own time limit, so only the harness deadline decides what is stuck. */
  runTimeoutMs: number;
  /** Whether the run at this index may start yet; polled until it may. */
  released: (index: number) => boolean;
  shouldGiveUp: () => boolean;
  onOutcome: (outcome: RunOutcome) => void;
}

const RETRY_MS = 1_000;
const RELEASE_POLL_MS = 250;

export async function runPool(opts: RunPoolOptions): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = [];
  let next = 0;
  const lane = async () => {
    while (next < opts.runIds.length) {
      const index = next++;
      while (!opts.released(index) && Date.now() < opts.deadline && !opts.shouldGiveUp()) await sleep(RELEASE_POLL_MS);
      const outcome = await oneRun(opts, opts.runIds[index]);
      outcomes.push(outcome);
      opts.onOutcome(outcome);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, opts.runIds.length) }, lane));
  return outcomes;
}

async function oneRun(opts: RunPoolOptions, runId: string): Promise<RunOutcome> {
  const token = opts.tokenOf(runId);
  const started = Date.now();
  const giveUp = () => Date.now() >= opts.deadline || opts.shouldGiveUp();
  const input = { prompt: chaosPrompt(runId, token), limits: { timeoutMs: opts.runTimeoutMs } };
  for (;;) {
    if (giveUp()) return { runId, token, status: 'not-started' };
    try {
      await opts.client.workflow.start(WORKFLOW_TYPE, { taskQueue: opts.taskQueue, workflowId: runId, args: [input] });
      break;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) break; // an earlier attempt reached the server
      await sleep(RETRY_MS);
    }
  }
  const handle = opts.client.workflow.getHandle<() => Promise<AgentRunResult>>(runId);
  for (;;) {
    if (giveUp()) return { runId, token, status: 'stuck', durationMs: Date.now() - started };
    try {
      const result = await untilDeadline(handle.result(), opts.deadline);
      if (result === undefined) continue;
      const answer = result.answer;
      return { runId, token, status: 'completed', answer, correct: answer === expectedAnswer(token), durationMs: Date.now() - started };
    } catch (err) {
      if (err instanceof WorkflowFailedError) return { runId, token, status: 'failed', reason: failureReason(err), durationMs: Date.now() - started };
      await sleep(RETRY_MS); // the server is away; the run goes on without us
    }
  }
}

/** The promise's value, or undefined once the deadline passes. */
async function untilDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
