/**
 * Model calls sent again. A step of a run is the number of messages in the request; every request for a step
 * beyond the first is a re-send. A re-send is explained when the attempt before it was in flight at a crash:
 * its stream was cut by the kill, or it had completed so shortly before that its result could not be recorded.
 */
import type { Crash } from './monkey';
import type { TrackedRequest } from './requests';
import { promptFields } from './script';

/** A response completed this shortly before a kill may not have been reported to the server yet. */
export const ACK_GRACE_MS = 2_000;
/** A request the dying worker had already written can reach the model a moment after the kill is seen. */
const WIRE_SLACK_MS = 1_000;

type InFlight = 'openStream' | 'resultNotYetRecorded';

export interface ResendFigures {
  modelRequests: number;
  /** Requests beyond the first for the same run and step. */
  resent: number;
  /** Per crash, the model streams open when the process was killed (or, for the server, while it was down). */
  openAtCrash: number[];
  /** Sum of `openAtCrash`. */
  inFlightAtCrashes: number;
  /** Re-sends explained by a crash, by how the earlier attempt stood at that moment. */
  explainedBy: Record<InFlight, number>;
  /** Re-sends not explained by a crash: must be 0. */
  resentBeyondInFlight: number;
  /** `runId@step` of each unexplained re-send, for the report. */
  unexplained: string[];
}

export function resendFigures(requests: TrackedRequest[], crashes: Crash[]): ResendFigures {
  const byStep = new Map<string, TrackedRequest[]>();
  for (const r of requests) {
    const run = promptFields(r.body)?.runId ?? '(no run)';
    const key = `${run}@${Array.isArray(r.body?.messages) ? r.body.messages.length : '?'}`;
    byStep.set(key, [...(byStep.get(key) ?? []), r]);
  }
  let resent = 0;
  const explainedBy: Record<InFlight, number> = { openStream: 0, resultNotYetRecorded: 0 };
  const unexplained: string[] = [];
  for (const [key, attempts] of byStep) {
    for (let i = 1; i < attempts.length; i++) {
      resent++;
      const before = crashes.filter((c) => c.at < attempts[i].receivedAt);
      const how = before.map((c) => inFlightAt(attempts[i - 1], c)).find((h) => h !== undefined);
      if (how) explainedBy[how]++;
      else unexplained.push(key);
    }
  }
  const openAtCrash = crashes.map((c) => requests.filter((r) => inFlightAt(r, c) === 'openStream').length);
  return {
    modelRequests: requests.length,
    resent,
    openAtCrash,
    inFlightAtCrashes: openAtCrash.reduce((a, b) => a + b, 0),
    explainedBy,
    resentBeyondInFlight: unexplained.length,
    unexplained,
  };
}

/** How the request stood at the crash, or undefined when the crash did not touch it (sent later, or long done). */
function inFlightAt(r: TrackedRequest, crash: Crash): InFlight | undefined {
  // A server outage ends when it is back; until then the worker can neither start calls nor report results.
  const end = crash.upAt ?? crash.goneAt;
  if (r.receivedAt > end + (crash.kind === 'worker' ? WIRE_SLACK_MS : 0)) return undefined;
  if (r.closedAt !== undefined && r.closedAt < crash.at) return undefined; // cut off earlier, by another crash
  if (r.completedAt === undefined || r.completedAt > crash.at) return 'openStream';
  if (r.completedAt >= crash.at - ACK_GRACE_MS) return 'resultNotYetRecorded';
  return undefined;
}
