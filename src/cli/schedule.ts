/**
 * `agent schedule create|list|describe|pause|unpause|trigger|delete`: agent runs on a schedule, over
 * `AgentClient.schedules` (docs/schedules.md). Each command takes `--json`; `create` takes `agent start`'s input flags.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { InvalidAgentInputError, type AgentClient } from '../client';
import { parseWith, type AgentRunInput } from '../common/input';
import { CreateScheduleInputSchema, OVERLAP_POLICIES, type CreateScheduleInput, type OverlapPolicy, type ScheduleListEntry, type ScheduleView } from '../common/schedule';
import { parseDuration } from '../config';

/** What the schedule commands need of the CLI around them. */
export interface ScheduleCliContext {
  withClient<T>(fn: (client: AgentClient) => Promise<T>): Promise<T>;
  print(text: string): void;
  printJson(doc: unknown): void;
  /** Adds the flags of a run's input (`agent start`'s). */
  runInputOptions(cmd: Command): Command;
  /** The run input from those flags, and what is wrong with it in the flags' names (null: nothing). */
  runInput(prompt: string, flags: Record<string, unknown>): AgentRunInput;
  runInputProblem(input: AgentRunInput): string | null;
}

interface CreateFlags {
  json?: boolean;
  cron?: string;
  timezone?: string;
  every?: number;
  offset?: number;
  jitter?: number;
  overlap?: OverlapPolicy;
  catchupWindow?: number;
  paused?: boolean;
  note?: string;
}

/** The flag of each field of a schedule, for refusals in the operator's words. */
const FLAGS: Record<string, string> = {
  scheduleId: '<scheduleId>',
  cron: '--cron',
  timezone: '--timezone',
  intervalMs: '--every',
  offsetMs: '--offset',
  jitterMs: '--jitter',
  catchupWindowMs: '--catchup-window',
  overlap: '--overlap',
  note: '--note',
};

export function registerScheduleCommands(program: Command, ctx: ScheduleCliContext): void {
  const { withClient, print, printJson } = ctx;
  const schedule = program.command('schedule').description('agent runs on a schedule (a cron expression or an interval), over Temporal Schedules');
  const command = (nameAndArgs: string, description: string) => schedule.command(nameAndArgs).description(description).option('--json', 'machine-readable output');

  ctx
    .runInputOptions(command('create <scheduleId> <prompt>', 'create a schedule that starts a run of <prompt> (with the flags of `agent start`) on --cron or --every'))
    .option('--cron <expression>', 'a cron expression, e.g. "0 9 * * MON-FRI" or @hourly (the server checks it)')
    .option('--timezone <zone>', 'with --cron: the IANA time zone of its hours, e.g. Europe/Paris (default UTC)')
    .option('--every <duration>', 'an interval instead, e.g. 30m, 6h, 1d (whole seconds)', duration('--every'))
    .option('--offset <duration>', 'with --every: the offset into each interval, e.g. 15m', duration('--offset'))
    .option('--jitter <duration>', 'start each run up to this much later, at random, e.g. 30s', duration('--jitter'))
    .option('--overlap <policy>', `when a run is due while the last is still open: ${OVERLAP_POLICIES.join(' | ')} (default SKIP)`, overlapPolicy)
    .option('--catchup-window <duration>', 'how late a run missed while the server was down may still start (default one year)', duration('--catchup-window'))
    .option('--paused', 'create it paused')
    .option('--note <text>', 'a note, e.g. why it is paused')
    .action(async (scheduleId: string, prompt: string, o: CreateFlags & Record<string, unknown>) => {
      const input = ctx.runInput(prompt, o);
      // Checked before connecting, in the flags' names: the run's input, then the schedule's own fields.
      const problem = ctx.runInputProblem(input);
      if (problem) throw new InvalidAgentInputError(problem);
      const options: CreateScheduleInput = {
        scheduleId,
        input,
        ...definedOnly({
          cron: o.cron,
          timezone: o.timezone,
          intervalMs: o.every,
          offsetMs: o.offset,
          jitterMs: o.jitter,
          overlap: o.overlap,
          catchupWindowMs: o.catchupWindow,
          paused: o.paused,
          note: o.note,
        }),
      };
      const parsed = parseWith(CreateScheduleInputSchema, options, 'schedule');
      if (!parsed.ok) throw new InvalidAgentInputError(inFlags(parsed.error));
      const view = await withClient((client) => client.schedules.create(options));
      if (o.json) printJson(view);
      else print(`created schedule ${view.scheduleId}: ${specLine(view.spec)}${view.paused ? ', paused' : ''}; next run ${view.nextRunTimes[0] ?? 'none'}`);
    });

  command('list', 'list agent schedules')
    .option('--limit <n>', 'most schedules to show (default 100)', positiveInteger)
    .action(async (o: { json?: boolean; limit?: number }) => {
      const schedules = await withClient((client) => client.schedules.list(o.limit !== undefined ? { limit: o.limit } : {}));
      if (o.json) printJson(schedules);
      else print(formatList(schedules));
    });

  command('describe <scheduleId>', 'show a schedule: its spec, policies, state, next times and the runs it started')
    .action(async (scheduleId: string, o: { json?: boolean }) => {
      const view = await withClient((client) => client.schedules.describe(scheduleId));
      if (o.json) printJson(view);
      else print(formatSchedule(view));
    });

  for (const [name, verb] of [
    ['pause', 'pause a schedule: no run starts on its times until it is unpaused'],
    ['unpause', 'unpause a schedule: runs start on its next times'],
  ] as const) {
    command(`${name} <scheduleId>`, verb)
      .option('--note <text>', 'why')
      .action(async (scheduleId: string, o: { json?: boolean; note?: string }) => {
        const view = await withClient((client) => client.schedules[name](scheduleId, o.note));
        if (o.json) printJson(view);
        else print(`schedule ${scheduleId} ${view.paused ? 'paused' : 'active'}${view.note ? ` (${view.note})` : ''}`);
      });
  }

  command('trigger <scheduleId>', 'start a run of a schedule now, paused or not')
    .option('--overlap <policy>', `this run's overlap policy instead of the schedule's: ${OVERLAP_POLICIES.join(' | ')}`, overlapPolicy)
    .action(async (scheduleId: string, o: { json?: boolean; overlap?: OverlapPolicy }) => {
      await withClient((client) => client.schedules.trigger(scheduleId, o.overlap ? { overlap: o.overlap } : {}));
      if (o.json) printJson({ scheduleId, triggered: true });
      else print(`triggered ${scheduleId}: its run shows in \`agent schedule describe ${scheduleId}\` once started`);
    });

  command('delete <scheduleId>', 'delete a schedule (runs it started go on)').action(async (scheduleId: string, o: { json?: boolean }) => {
    await withClient((client) => client.schedules.delete(scheduleId));
    if (o.json) printJson({ scheduleId, deleted: true });
    else print(`deleted schedule ${scheduleId}`);
  });
}

const duration = (flag: string) => (value: string): number => {
  try {
    return parseDuration(flag, value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
};

function overlapPolicy(value: string): OverlapPolicy {
  const policy = value.toUpperCase().replace(/-/g, '_');
  if (!(OVERLAP_POLICIES as readonly string[]).includes(policy)) throw new InvalidArgumentError(`expected one of ${OVERLAP_POLICIES.join(', ')}`);
  return policy as OverlapPolicy;
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(value);
}

/** `Invalid schedule: intervalMs: ...` as `--every (intervalMs): ...`. */
function inFlags(error: string): string {
  return error
    .replace(/^Invalid schedule: /, '')
    .split('; ')
    .map((issue) => {
      const at = issue.indexOf(': ');
      const field = at < 0 ? '' : issue.slice(0, at);
      return FLAGS[field] ? `${FLAGS[field]} (${field})${issue.slice(at)}` : issue;
    })
    .join('; ');
}

const definedOnly = <T extends Record<string, unknown>>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** `every 1h`, `cron "0 9 * * *" (Europe/Paris)`, with jitter when there is some. */
function specLine(spec: ScheduleView['spec'] | null): string {
  if (!spec) return '-';
  const base = spec.cron !== null ? `cron "${spec.cron}"${spec.timezone ? ` (${spec.timezone})` : ''}` : spec.intervalMs !== null ? `every ${ms(spec.intervalMs)}${spec.offsetMs ? ` +${ms(spec.offsetMs)}` : ''}` : 'calendar';
  return spec.jitterMs ? `${base}, jitter ${ms(spec.jitterMs)}` : base;
}

function ms(n: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) if (n >= size && n % size === 0) return `${n / size}${unit}`;
  return `${n}ms`;
}

function formatList(schedules: ScheduleListEntry[]): string {
  if (!schedules.length) return 'no agent schedules';
  const rows = [
    ['SCHEDULE ID', 'SPEC', 'STATE', 'NEXT RUN', 'PROMPT'],
    ...schedules.map((s) => [s.scheduleId, specLine(s.spec), s.paused ? 'paused' : 'active', s.nextRunTimes[0] ?? '-', oneLine(s.prompt ?? '-', 60)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

function formatSchedule(v: ScheduleView): string {
  return [
    `schedule ${v.scheduleId}: ${specLine(v.spec)}, overlap ${v.overlap}, catch-up window ${ms(v.catchupWindowMs)}`,
    `state: ${v.paused ? 'paused' : 'active'}${v.note ? ` (${v.note})` : ''}${v.tenant ? `; tenant ${v.tenant}` : ''}${v.createdBy ? `; created by ${v.createdBy}` : ''}`,
    `prompt: ${oneLine(v.input.prompt, 160)}`,
    `next runs: ${v.nextRunTimes.length ? v.nextRunTimes.join(', ') : 'none'}`,
    `runs started: ${v.runsStarted} (skipped for overlap: ${v.skippedOverlap}, missed the catch-up window: ${v.missedCatchupWindow})`,
    ...(v.runningRuns.length ? [`open: ${v.runningRuns.join(', ')}`] : []),
    ...v.recentRuns.map((r) => `  ${r.startedAt}  ${r.workflowId}`),
  ].join('\n');
}

const oneLine = (text: string, max: number): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
};
