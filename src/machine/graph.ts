/**
 * The machine's table as a picture: Mermaid `stateDiagram-v2` or Graphviz DOT, drawn from the rows. Per state: its own
 * rows, its eventless rows, then the parent group's rows it consults, each an edge labelled `EVENT [guard]`. A state's
 * eventless rows are drawn once, from a choice node in front of it (`enter_STATE`) that every move into it reaches.
 */
import { AgentState, isTerminal } from '../common/states';
import { ALWAYS_ROWS, ROWS, STATES } from './machine';
import { REJECTED, type Row, SELF } from './table';

export type GraphFormat = 'mermaid' | 'dot';
export const GRAPH_FORMATS: readonly GraphFormat[] = ['mermaid', 'dot'];

interface Edge {
  from: string;
  to: string;
  label: string;
}

/** The choice node in front of a state with eventless rows; null when it is entered directly. */
const choiceOf = (state: AgentState): string | null => (ALWAYS_ROWS[state].length > 0 ? `enter_${state}` : null);

/** Every drawn edge, each once (a row that keeps the state only with `selfLoops`). */
function edges(selfLoops: boolean): Edge[] {
  const out: Edge[] = [];
  const add = (e: Edge) => {
    if (!out.some((x) => x.from === e.from && x.to === e.to && x.label === e.label)) out.push(e);
  };
  const drawRow = (state: AgentState, r: Row) => {
    if (r.target === REJECTED || (r.target === SELF && !selfLoops)) return;
    const to = r.target === SELF ? state : (choiceOf(r.target) ?? r.target);
    add({ from: state, to, label: `${r.event}${r.guard ? ` [${r.guard.name}]` : ''}` });
  };
  for (const state of Object.values(AgentState)) {
    const own = STATES[state].rows;
    own.forEach((r) => drawRow(state, r));
    const choice = choiceOf(state);
    if (choice) {
      for (const r of ALWAYS_ROWS[state]) add({ from: choice, to: r.target, label: `[${r.guard.name}]` });
      add({ from: choice, to: state, label: 'else' });
    }
    ROWS[state].filter((r) => !own.includes(r)).forEach((r) => drawRow(state, r));
  }
  return out;
}

/** The machine drawn from its rows: IDLE is the start, the terminal states end (COMPLETED may take a follow-up message). */
export function machineGraph(format: GraphFormat, options: { selfLoops?: boolean } = {}): string {
  const list = edges(options.selfLoops ?? true);
  const choices = [...new Set(list.flatMap((e) => [e.from, e.to]).filter((n) => n.startsWith('enter_')))];
  const terminal = Object.values(AgentState).filter((s) => isTerminal(s));
  if (format === 'dot') {
    return [
      'digraph agentRun {',
      '  rankdir=LR;',
      '  node [shape=box, style=rounded];',
      ...choices.map((c) => `  "${c}" [shape=diamond, label=""];`),
      ...terminal.map((s) => `  "${s}" [peripheries=2];`),
      ...list.map((e) => `  "${e.from}" -> "${e.to}" [label="${e.label}"];`),
      '}',
      '',
    ].join('\n');
  }
  return [
    'stateDiagram-v2',
    ...choices.map((c) => `  state ${c} <<choice>>`),
    '  [*] --> IDLE',
    ...list.map((e) => `  ${e.from} --> ${e.to}: ${e.label}`),
    ...terminal.map((s) => `  ${s} --> [*]`),
    '',
  ].join('\n');
}

/** Markdown's table cells: a target that keeps the state or refuses the event is named so. */
const cell = (target: Row['target']) => (target === SELF ? '(self)' : target === REJECTED ? '(refused)' : target);

/**
 * The table of rows as Markdown (state | event | guard | target | action): per state its own rows, then its eventless
 * rows (event `always`); the parent group's rows once, at the end. docs/architecture.md holds it (`npm run docs:machine`).
 */
export function machineTable(): string {
  const line = (state: string, event: string, guard: string | null, target: string, action: string) => `| ${state} | ${event} | ${guard ?? ''} | ${target} | ${action} |`;
  const lines = ['| state | event | guard | target | action |', '| --- | --- | --- | --- | --- |'];
  const withParent: AgentState[] = [];
  for (const state of Object.values(AgentState)) {
    const node = STATES[state];
    if (node.parent.length > 0) withParent.push(state);
    for (const r of node.rows) lines.push(line(state, r.event, r.guard?.name ?? null, cell(r.target), r.action.name));
    for (const r of node.always) lines.push(line(state, 'always', r.guard.name, r.target, r.action.name));
  }
  const parent = STATES[withParent[0]].parent;
  for (const r of parent) lines.push(line(`running (${withParent.join(', ')})`, r.event, r.guard?.name ?? null, cell(r.target), r.action.name));
  return `${lines.join('\n')}\n`;
}

/** The markers in docs/architecture.md between which `npm run docs:machine` writes the table. */
export const TABLE_MARKERS = { start: '<!-- machine-table:start (npm run docs:machine) -->', end: '<!-- machine-table:end -->' } as const;

/** A document with the table written between its markers. */
export function withMachineTable(doc: string): string {
  const from = doc.indexOf(TABLE_MARKERS.start);
  const to = doc.indexOf(TABLE_MARKERS.end);
  if (from < 0 || to < from) throw new Error(`the document lacks the markers ${TABLE_MARKERS.start} ... ${TABLE_MARKERS.end}`);
  return `${doc.slice(0, from + TABLE_MARKERS.start.length)}\n\n${machineTable()}\n${doc.slice(to)}`;
}
