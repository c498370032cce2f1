/** Rows of CRITIQUE: the critic's decision (the model's or a custom critic's, or the rules' when it is not asked or fails) decides the next step. */
import { customCritic } from '../common/input';
import { CritiqueAction } from '../common/states';
import type { CritiqueDecision } from '../common/view';
import { ruleCritique } from './critic';
import { isStuckInSetbacks } from './guards';
import { confident, lastAssistantText, withSideUsage } from './responses';
import type { RunSnapshot } from './snapshot';
import { enter, fail, finish, plain, S, TOOL_RETRY_NOTE } from './core';
import { action, type EventOf, guard, row, type Row } from './table';
import { allStepsDone, stepsAfter } from './plan';

/** What the model is told when the critique has ended the plan's last step. */
export const ALL_STEPS_DONE = 'Every step of the plan is done: give your final answer now.';

type Judged = EventOf<'CRITIQUE_DONE' | 'CRITIC_FAILED'>;

/** The snapshot with the decision recorded (and the critic's usage), the decision, and the action it leads to. */
function judgement(s: RunSnapshot, e: Judged): { next: RunSnapshot; decision: CritiqueDecision; act: CritiqueAction; afterTools: boolean; modelOnTools: boolean } {
  let judged: RunSnapshot;
  if (e.type === 'CRITIQUE_DONE') {
    judged = { ...withSideUsage(s, e.usage, e.replayed ? 'replayedCritiques' : undefined), lastCritique: confident(e.decision, s.options.critiqueMinConfidence) };
  } else {
    const fallback = ruleCritique(s);
    const critic = customCritic(s.options.critique);
    const who = critic ? `critic "${critic}"` : 'model critic';
    judged = { ...s, lastCritique: { ...fallback, reason: `${fallback.reason} (${who} unavailable: ${e.error})` } };
  }
  const decision = judged.lastCritique!;
  const afterTools = judged.toolRound.lastResults.length > 0;
  const setback = decision.action === CritiqueAction.RETRY || decision.action === CritiqueAction.REPLAN;
  const next: RunSnapshot = { ...judged, counters: { ...judged.counters, setbacksInARow: setback ? judged.counters.setbacksInARow + 1 : 0 } };
  // A model (or custom) critic's word on a tool step: the model has not answered with the results yet, so it cannot be complete.
  const modelOnTools = afterTools && e.type === 'CRITIQUE_DONE' && judged.options.critique !== 'rules';
  const act = modelOnTools && decision.action === CritiqueAction.COMPLETE ? CritiqueAction.CONTINUE : decision.action;
  // A structured plan's current step moves with the decision (plan.ts).
  if (next.planSteps) next.planSteps = stepsAfter(next.planSteps, act);
  return { next, decision, act, afterTools, modelOnTools };
}

const stuck = guard<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('stuckInSetbacks', (s, e) => isStuckInSetbacks(judgement(s, e).next));
const failStuck = action<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('failNoProgress', (s, e, now) => {
  const { next, decision } = judgement(s, e);
  return fail(next, e, now, `no progress: the critic asked for another attempt ${next.counters.setbacksInARow} times in a row (last: ${decision.action}, ${decision.reason})`);
});

const decides = (act: CritiqueAction) => guard<'CRITIQUE_DONE' | 'CRITIC_FAILED'>(`decides${act[0].toUpperCase()}${act.slice(1)}`, (s, e) => judgement(s, e).act === act);
/** Once the critique ends a plan's last step, the model is told every step is done, and answers. */
const goOn = action<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('carryOn', (s, e, now) => {
  const { next } = judgement(s, e);
  if (!allStepsDone(s.planSteps) && allStepsDone(next.planSteps)) next.messages = [...next.messages, { role: 'user', content: ALL_STEPS_DONE }];
  return enter(next, plain(S.STREAMING), e, now);
});
/** Another attempt: an answer is told why; after tools, the rules' retry follows a failure the model sees, a model critic's is told. */
const retry = action<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('askAnotherAttempt', (s, e, now) => {
  const { next, decision, afterTools, modelOnTools } = judgement(s, e);
  if (!afterTools) next.messages = [...s.messages, { role: 'user', content: `Your answer needs another attempt: ${decision.reason}` }];
  else if (modelOnTools) next.messages = [...s.messages, { role: 'user', content: `${TOOL_RETRY_NOTE}${decision.reason}` }];
  return enter(next, plain(S.STREAMING), e, now);
});
const replan = action<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('askNewPlan', (s, e, now) => {
  const { next, decision } = judgement(s, e);
  next.messages = [...s.messages, { role: 'user', content: `The current approach is not working (${decision.reason}). Make a new plan.` }];
  return enter(next, plain(S.PLANNING), e, now);
});
/** A message sent during the run deserves an answer before the run ends. */
const messagesQueued = guard<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('completesWithMessagesQueued', (s, e) => judgement(s, e).act === CritiqueAction.COMPLETE && s.queuedMessages.length > 0);
const complete = action<'CRITIQUE_DONE' | 'CRITIC_FAILED'>('completeWithAnswer', (s, e, now) => {
  const { next, decision } = judgement(s, e);
  return finish(next, S.COMPLETED, e, now, decision.reason, lastAssistantText(s));
});

const critiqueRows = (event: 'CRITIQUE_DONE' | 'CRITIC_FAILED'): Row[] => [
  row(event, stuck, S.FAILED, failStuck),
  row(event, decides(CritiqueAction.CONTINUE), S.STREAMING, goOn),
  row(event, decides(CritiqueAction.RETRY), S.STREAMING, retry),
  row(event, decides(CritiqueAction.REPLAN), S.PLANNING, replan),
  row(event, messagesQueued, S.STREAMING, goOn),
  row(event, null, S.COMPLETED, complete),
];

export const CRITIQUE_ROWS: readonly Row[] = [...critiqueRows('CRITIQUE_DONE'), ...critiqueRows('CRITIC_FAILED')];
