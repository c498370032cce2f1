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
