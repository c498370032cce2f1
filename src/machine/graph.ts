/**
 * The machine's table as a picture: Mermaid `stateDiagram-v2` or Graphviz DOT, drawn from the rows. Each row is an
 * edge labelled `EVENT [guard]`; a target with entry rows (a model step's limits, budget, pause, compaction) is
 * reached through a choice node whose edges are those rows, so the detours are drawn once, not on every edge.
 */
import { AgentState, isTerminal } from '../common/states';
import { ENTRY_ROWS, ROWS } from './machine';
import { REJECTED, SELF } from './table';

export type GraphFormat = 'mermaid' | 'dot';
export const GRAPH_FORMATS: readonly GraphFormat[] = ['mermaid', 'dot'];

interface Edge {
  from: string;
  to: string;
  label: string;
}

/** The choice node in front of a state with entry rows that may lead elsewhere; null when it is entered directly. */
const choiceOf = (state: AgentState): string | null => (ENTRY_ROWS.some((r) => r.guard && r.guards.includes(state)) ? `enter_${state}` : null);

/** Every drawn edge, each once: the rows (a row that keeps the state only with `selfLoops`), then the entry rows. */
function edges(selfLoops: boolean): Edge[] {
  const out: Edge[] = [];
  const add = (e: Edge) => {
    if (!out.some((x) => x.from === e.from && x.to === e.to && x.label === e.label)) out.push(e);
  };
  const entered = new Set<AgentState>();
  for (const state of Object.values(AgentState)) {
    for (const r of ROWS[state]) {
      if (r.target === REJECTED || (r.target === SELF && !selfLoops)) continue;
      const label = `${r.event}${r.guard ? ` [${r.guard.name}]` : ''}`;
      const targets: readonly AgentState[] = r.target === SELF ? [state] : typeof r.target === 'string' ? [r.target] : r.target;
      for (const to of targets) {
        const choice = r.target === SELF ? null : choiceOf(to);
        if (choice) entered.add(to);
        add({ from: state, to: choice ?? to, label });
      }
    }
  }
  for (const state of entered) {
    ENTRY_ROWS.forEach((r, i) => {
      if (!r.guards.includes(state)) return;
      const to = r.target ?? state;
      // Compacting first goes through COMPACTING's own entry rows (those after this one).
      const via = r.target === AgentState.COMPACTING && ENTRY_ROWS.slice(i + 1).some((x) => x.guard && x.guards.includes(to)) ? choiceOf(to) : null;
      if (via) entered.add(to);
      add({ from: choiceOf(state)!, to: via ?? to, label: r.guard ? `[${r.guard.name}]` : 'else' });
    });
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
