/** Prompts of the sub-agent patterns and the plan parser: pure functions, no Temporal import. */

/** Numbered items win over bullets, so sub-bullets under numbered steps are not taken as steps. */
const NUMBERED = /^\s*(?:\*\*)?(?:step\s+)?\d+\s*[.):](?:\*\*)?\s+(.+)$/i;
const BULLETED = /^\s*[-*•+]\s+(.+)$/;
/** Earlier results quoted to an executor are clipped; the synthesiser sees them whole. */
const QUOTE_LIMIT = 6_000;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (truncated)` : text);
const clean = (item: string) => item.replace(/^\*\*(.+?)\*\*:?$/, '$1').trim();

/**
 * Steps from the planner's answer: its numbered lines, else its bulleted lines, capped at `maxSteps`.
 * An answer with neither is one step; an empty answer leaves the task itself as the only step.
 */
export function parseSteps(answer: string, maxSteps: number, task: string): string[] {
  const lines = answer.split(/\r?\n/);
  for (const pattern of [NUMBERED, BULLETED]) {
    const items = lines.map((line) => pattern.exec(line)?.[1]).filter((s): s is string => !!s).map(clean).filter(Boolean);
    if (items.length) return items.slice(0, maxSteps);
  }
  return [answer.trim() || task];
}

const numbered = (items: string[]) => items.map((item, i) => `${i + 1}. ${item}`).join('\n');

export function plannerPrompt(task: string, maxSteps: number): string {
  return [
    'You are the planner of a team of agents. Other agents will carry out your steps one after another.',
    `Break the task below into at most ${maxSteps} concrete steps. Do not call tools and do not do the work yourself.`,
    'Reply with a numbered list only, one step per line ("1. ..."), and nothing else.',
    '',
    `Task:\n${task}`,
  ].join('\n');
}

export interface DoneStep {
  step: string;
  answer: string | null;
}

export function executorPrompt(task: string, plan: string[], done: DoneStep[], index: number): string {
  const parts = [
    'You are one of a team of agents carrying out a plan for a larger task. Carry out only your step and report its result.',
    `Task:\n${task}`,
    `Plan:\n${numbered(plan)}`,
  ];
  if (done.length) {
    parts.push(`Results of earlier steps:\n${done.map((d, i) => `Step ${i + 1} (${d.step}):\n${clip(d.answer ?? '', QUOTE_LIMIT)}`).join('\n\n')}`);
  }
  parts.push(`Your step (${index + 1} of ${plan.length}): ${plan[index]}`);
  return parts.join('\n\n');
}

export function synthesiserPrompt(task: string, done: DoneStep[]): string {
  return [
    'You are the synthesiser of a team of agents. Write the final answer to the task from the results of its steps.',
    'Answer the task directly; do not describe the steps or call tools.',
    `Task:\n${task}`,
    `Step results:\n${done.map((d, i) => `Step ${i + 1} (${d.step}):\n${d.answer ?? ''}`).join('\n\n')}`,
  ].join('\n\n');
}

export function stagePrompt(task: string, stage: { name: string; instructions: string }, previous?: { name: string; answer: string | null }): string {
  const parts = [`You are the ${stage.name} stage of a pipeline of agents working on one task.`, `Task:\n${task}`];
  if (previous) parts.push(`Output of the previous stage (${previous.name}):\n${previous.answer ?? ''}`);
  parts.push(`Your instructions: ${stage.instructions}`);
  return parts.join('\n\n');
}
