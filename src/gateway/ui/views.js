/*
 * The page's views of how a run went, beside app.js (which follows the run): the search and the start form of the
 * list, and on a run's page its input and links, the conversation, the machine as a picture, time per step, the
 * activities (each model call's latency and tokens), and time travel. Plain browser JavaScript; it uses app.js's
 * `el`, `api` and `time`, which are defined by the time anything here runs. Every value goes in as text.
 */
'use strict';

/** The compaction activity's summary message starts with this (src/activities/compaction.ts SUMMARY_PREFIX). */
const SUMMARY_PREFIX = 'Summary of the earlier conversation:';
const SVG_NS = 'http://www.w3.org/2000/svg';

const RunViews = (() => {
  const runLink = (id, label = id) => el('a', { href: `/ui/runs/${encodeURIComponent(id)}` }, label);
  const ms = (n) => (n === null || n === undefined ? '' : n < 1000 ? `${n} ms` : n < 60_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`);
  const cost = (usd) => (usd === null || usd === undefined ? '' : `$${usd.toFixed(4)}`);

  // ---- the list: search and rows ----

  /** The search fields as the list route's query (state is app.js's filter). */
  function searchParams(query) {
    for (const name of ['q', 'agent']) {
      const value = document.getElementById(`search-${name}`).value.trim();
      if (value) query.set(name, value);
    }
    for (const name of ['since', 'until']) {
      const value = document.getElementById(`search-${name}`).value;
      if (value) query.set(name, new Date(value).toISOString());
    }
    return query;
  }

  /**
   * Temporal's status of the run's workflow execution, in words only where the run's state does not already say it:
   * an ABORTED run's execution COMPLETED, which reads as a contradiction and is no news; TERMINATED or TIMED_OUT is.
   */
  function executionCell(run) {
    const status = run.executionStatus;
    const expected = status === 'RUNNING' ? !TERMINAL.includes(run.agentState) : (status === 'COMPLETED' && ['COMPLETED', 'ABORTED'].includes(run.agentState)) || (status === 'FAILED' && run.agentState === 'FAILED');
    return el('td', { title: `Temporal workflow execution: ${status}`, 'data-testid': 'execution' }, expected ? (status === 'RUNNING' ? 'open' : 'closed') : status);
  }

  /** `2026-12-01 21:55:41`, local time: one line in the list, and sortable by eye. */
  function dateTime(iso) {
    const d = new Date(iso);
    const pad = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function listRow(run) {
    const duration = run.durationMs ?? (run.closeTime ? null : Date.now() - Date.parse(run.startTime));
    return el('tr', { 'data-workflow-id': run.workflowId },
      el('td', { class: 'id-cell' }, runLink(run.workflowId), run.origin ? el('span', { class: 'tag' }, 'fork') : null, run.parentWorkflowId ? el('span', { class: 'tag' }, 'child') : null, run.scheduleId ? el('span', { class: 'tag', title: `started by schedule ${run.scheduleId}`, 'data-schedule': run.scheduleId }, 'scheduled') : null),
      el('td', {}, el('span', { class: `state state-${run.agentState ?? 'unknown'}` }, run.agentState ?? '?')),
      executionCell(run),
      el('td', { class: 'date' }, dateTime(run.startTime)),
      el('td', { class: 'date' }, run.closeTime ? dateTime(run.closeTime) : ''),
      el('td', { class: 'num' }, duration === null ? '' : (run.closeTime ? '' : 'running ') + ms(duration)),
      el('td', { class: 'num' }, cost(run.costUsd)),
      el('td', {}, run.agent ?? ''),
      el('td', { class: 'prompt-cell', title: run.prompt ?? '' }, run.prompt ?? ''),
    );
  }

  /** Wires the search form: any change re-reads the list (`refresh`), and the URL keeps the search for a link. */
  function wireSearch(refresh) {
    const params = new URLSearchParams(location.search);
    for (const name of ['q', 'agent', 'since', 'until']) {
      const input = document.getElementById(`search-${name}`);
      const value = params.get(name);
      if (value) input.value = name === 'since' || name === 'until' ? toLocalInput(value) : value;
    }
    document.getElementById('search').addEventListener('submit', (event) => {
      event.preventDefault();
      const query = searchParams(new URLSearchParams());
      const state = document.getElementById('state-filter').value;
      if (state) query.set('state', state);
      history.replaceState(null, '', query.size ? `/ui?${query}` : '/ui');
      refresh();
    });
  }

  const toLocalInput = (iso) => {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? '' : new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  };

  // ---- the start form ----

  const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);

  /** The form's fields as `POST /v1/runs` takes them; empty fields are left to the worker's defaults. */
  function startBody(form) {
    const value = (name) => form.elements[name].value.trim();
    const body = { prompt: value('prompt') };
    if (value('agent')) body.agent = value('agent');
    if (value('model')) body.model = value('model');
    if (value('tools')) body.tools = list(value('tools'));
    if (value('approval')) body.approval = { tools: list(value('approval')) };
    const limits = {};
    for (const name of ['maxLoops', 'maxToolCalls', 'timeoutMs']) if (value(name)) limits[name] = Number(value(name));
    if (value('maxCostUsd')) limits.maxCostUsd = Number(value('maxCostUsd'));
    if (Object.keys(limits).length) body.limits = limits;
    return body;
  }

  function wireStartForm() {
    const form = document.getElementById('start-form');
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const result = document.getElementById('start-result');
      result.textContent = '';
      const workflowId = form.elements.workflowId.value.trim();
      try {
        const started = await api('POST', `/v1/runs${workflowId ? `?workflowId=${encodeURIComponent(workflowId)}` : ''}`, startBody(form));
        location.assign(`/ui/runs/${encodeURIComponent(started.workflowId)}`);
      } catch (err) {
        showError(result, err, 'not started: ');
      }
    });
  }

  // ---- one run ----

  /**
   * The run page's extra views. `update(view)` is called on every state view app.js draws; the conversation and the
   * activities are read again only when the run moved (its step changed), the links when the page opens.
   */
  function runDetails(runPath, workflowId) {
    let machine = null;
    let lastStep = null;
    let selected = null;
    let view = null;

    api('GET', '/v1/machine').then((m) => {
      machine = m;
      if (view) drawMachine();
    }, () => undefined);

    function update(next) {
      view = next;
      document.getElementById('compare-origin').hidden = next.origin?.kind !== 'fork';
      drawMachine();
      drawLinks();
      // The links scan the list (forks are found by their memo): read once, again after a fork from this page.
      if (!relatedRead) loadRelated();
      if (next.step === lastStep) return;
      lastStep = next.step;
      loadConversation();
      loadActivities();
    }

    // -- input and conversation --

    async function loadConversation() {
      try {
        const full = await api('GET', `${runPath}?messages=true`);
        // The copy the run stored (no worker answered in time) has no messages: keep what is drawn, read again next view.
        if (!Array.isArray(full.messages)) {
          lastStep = null;
          return;
        }
        drawInput(full.messages ?? []);
        drawToolCallChoices(full.messages ?? []);
        document.getElementById('conversation').replaceChildren(...conversation(full.messages ?? []));
      } catch {
        /* app.js reports the connection; the conversation stays as last drawn */
      }
    }

    function drawInput(messages) {
      const system = messages.find((m) => m.role === 'system');
      const prompt = messages.find((m) => m.role === 'user' && !m.content.startsWith(SUMMARY_PREFIX));
      const rows = [['prompt', prompt?.content ?? '']];
      if (system) rows.push(['system prompt', system.content]);
      rows.push(['limits', Object.entries(view.limits ?? {}).map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ')]);
      document.getElementById('input').replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)]));
    }

    /** Messages in order; each tool call's result under the call, compaction's summary marked as such. */
    function conversation(messages) {
      const results = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content]));
      return messages
        .filter((m) => m.role !== 'tool' || !messages.some((a) => a.role === 'assistant' && a.toolCalls?.some((c) => c.id === m.toolCallId)))
        .map((m, i) => {
          const compacted = m.role === 'user' && m.content?.startsWith(SUMMARY_PREFIX);
          return el('div', { class: `msg msg-${m.role}${compacted ? ' msg-compacted' : ''}`, 'data-role': m.role, 'data-index': i },
            el('div', { class: 'msg-role' }, compacted ? 'compacted: summary of earlier messages' : m.role),
            m.content ? el('pre', {}, compacted ? m.content.slice(SUMMARY_PREFIX.length).trim() : m.content) : null,
            ...(m.toolCalls ?? []).map((c) =>
              el('div', { class: 'tool-call', 'data-tool-call-id': c.id },
                el('div', {}, el('strong', {}, c.name), ' ', el('span', { class: 'mono' }, typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments))),
                results.has(c.id) ? el('pre', { class: 'tool-result' }, results.get(c.id)) : el('div', { class: 'muted' }, 'no result yet'),
              ),
            ),
          );
        });
    }

    // -- activities: model calls' latency and tokens --

    async function loadActivities() {
      try {
        const { activities } = await api('GET', `${runPath}/activities`);
        drawActivities(activities);
      } catch {
        /* as above */
      }
    }

    /** The step an activity ran in: the last transition at or before it was scheduled. */
    function stepAt(iso) {
      const first = view.step - view.transitions.length + 1;
      let step = null;
      view.transitions.forEach((t, i) => {
        if (t.at <= iso) step = first + i;
      });
      return step;
    }

    function drawActivities(activities) {
      const rows = activities.map((a) => {
        const usage = a.model?.usage;
        return el('tr', { 'data-activity': a.activity },
          el('td', {}, stepAt(a.scheduledAt) ?? ''),
          el('td', {}, a.summary ?? a.activity),
          el('td', { class: 'num' }, ms(a.latencyMs)),
          el('td', { class: 'num' }, a.totalMs !== null && a.latencyMs !== null && a.totalMs - a.latencyMs > 0 ? ms(a.totalMs - a.latencyMs) : ''),
          el('td', { class: 'num' }, a.attempt > 1 ? String(a.attempt) : ''),
          el('td', { class: 'num' }, usage ? String(usage.promptTokens) : ''),
          el('td', { class: 'num' }, usage ? String(usage.completionTokens) : ''),
          el('td', {}, a.model?.model ?? ''),
          el('td', {}, a.error ? `${a.outcome}: ${a.error}` : a.outcome + (a.model?.finishReason ? ` (${a.model.finishReason})` : '')),
        );
      });
      if (rows.length === 0) rows.push(el('tr', {}, el('td', { colspan: 9, class: 'muted' }, 'no activity in this run\'s history yet')));
      document.querySelector('#activities tbody').replaceChildren(...rows);
    }

    // -- parent, children, forks --

    let related = { children: [], forks: [], parent: null, schedule: null };
    let relatedRead = false;

    async function loadRelated() {
      relatedRead = true;
      try {
        const [children, forks, self] = await Promise.all([
          api('GET', `/v1/runs?parent=${encodeURIComponent(workflowId)}&limit=50`),
          api('GET', `/v1/runs?forkOf=${encodeURIComponent(workflowId)}&limit=50`),
          api('GET', `/v1/runs?q=${encodeURIComponent(workflowId)}&limit=20`),
        ]);
        const own = self.runs.find((r) => r.workflowId === workflowId);
        related = { children: children.runs, forks: forks.runs, parent: own?.parentWorkflowId ?? null, schedule: own?.scheduleId ?? null };
        drawLinks();
      } catch {
        relatedRead = false; // read again with the next state view
      }
    }

    function drawLinks() {
      const items = [];
      if (view.origin) items.push(el('li', { 'data-link': 'origin' }, view.origin.kind === 'fork' ? 'forked from ' : 'continued from ', runLink(view.origin.workflowId), ` at step ${view.origin.step}`));
      if (related.parent) items.push(el('li', { 'data-link': 'parent' }, 'child of ', runLink(related.parent)));
      if (related.schedule) items.push(el('li', { 'data-link': 'schedule' }, 'started by schedule ', el('code', {}, related.schedule)));
      for (const c of related.children) items.push(el('li', { 'data-link': 'child' }, 'child ', runLink(c.workflowId), ' ', el('span', { class: `state state-${c.agentState}` }, c.agentState ?? '?')));
      for (const f of related.forks) items.push(el('li', { 'data-link': 'fork' }, 'fork ', runLink(f.workflowId), f.origin ? ` from step ${f.origin.step} ` : ' ', el('span', { class: `state state-${f.agentState}` }, f.agentState ?? '?')));
      document.getElementById('links').replaceChildren(...(items.length ? items : [el('li', { class: 'muted' }, 'no parent, children, forks or schedule')]));
    }

    // -- the machine --

    /** Layers by distance from the initial state, terminal states last; edges from the table, those the run took drawn bold. */
    function drawMachine() {
      if (!machine || !view) return;
      const { transitions, terminal, initial } = machine;
      const states = Object.keys(transitions);
      const depth = { [initial]: 0 };
      const queue = [initial];
      while (queue.length) {
        const s = queue.shift();
        for (const targets of Object.values(transitions[s])) {
          for (const t of targets) if (!(t in depth) && !terminal.includes(t)) (depth[t] = depth[s] + 1), queue.push(t);
        }
      }
      const last = Math.max(...Object.values(depth)) + 1;
      for (const s of states) if (!(s in depth)) depth[s] = terminal.includes(s) ? last : last;
      const columns = [];
      for (const s of states) (columns[depth[s]] ??= []).push(s);
      const W = 150;
      const H = 46;
      const pos = {};
      columns.forEach((col, x) => col.forEach((s, y) => (pos[s] = { x: 20 + x * (W + 50), y: 20 + y * (H + 24) })));
      const width = 20 + columns.length * (W + 50);
      const height = 20 + Math.max(...columns.map((c) => c.length)) * (H + 24);

      const taken = new Map();
      for (const t of view.transitions) if (t.from !== t.to) taken.set(`${t.from}>${t.to}`, (taken.get(`${t.from}>${t.to}`) ?? 0) + 1);
      const visited = new Set(view.transitions.flatMap((t) => [t.from, t.to]));
      const edges = new Set();
      for (const [from, events] of Object.entries(transitions)) for (const targets of Object.values(events)) for (const to of targets) if (to !== from) edges.add(`${from}>${to}`);
      // Each edge's rows, `EVENT [guard]` (and the entry row it detoured through), from the table's own rows.
      const rowLabels = new Map();
      for (const r of machine.rows ?? []) {
        const key = `${r.from}>${r.to}`;
        const label = `${r.event}${r.guard ? ` [${r.guard}]` : ''}${r.via ? ` via ${r.via}` : ''}`;
        if (!rowLabels.has(key)) rowLabels.set(key, []);
        if (!rowLabels.get(key).includes(label)) rowLabels.get(key).push(label);
      }

      const svg = svgEl('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'state machine' });
      svg.append(svgEl('defs', {}, marker('arrow', '#c4cad4'), marker('arrow-taken', '#1849a9')));
      const ordered = [...edges].sort((a, b) => Number(taken.has(a)) - Number(taken.has(b)));
      for (const key of ordered) {
        const [from, to] = key.split('>');
        const a = pos[from];
        const b = pos[to];
        const x1 = a.x + W / 2;
        const y1 = a.y + H / 2;
        const x2 = b.x + W / 2;
        const y2 = b.y + H / 2;
        const bend = (x1 === x2 ? 60 : 18) * (from < to ? 1 : -1);
        const mx = (x1 + x2) / 2 + bend;
        const my = (y1 + y2) / 2 - bend;
        const isTaken = taken.has(key);
        const path = svgEl('path', {
          d: `M${x1},${y1} Q${mx},${my} ${x2},${y2}`,
          class: isTaken ? 'edge edge-taken' : 'edge',
          'data-edge': key,
          'data-rows': (rowLabels.get(key) ?? []).join('; '),
          'marker-end': `url(#${isTaken ? 'arrow-taken' : 'arrow'})`,
        });
        const rows = rowLabels.get(key) ?? [];
        path.append(svgEl('title', {}, `${from} → ${to}${isTaken ? ` (taken ${taken.get(key)}×)` : ''}${rows.length ? `\n${rows.join('\n')}` : ''}`));
        svg.append(path);
      }
      for (const s of states) {
        const { x, y } = pos[s];
        const cls = ['node', visited.has(s) ? 'node-visited' : '', s === view.state ? 'node-current' : '', terminal.includes(s) ? 'node-terminal' : ''].filter(Boolean).join(' ');
        const g = svgEl('g', { class: cls, 'data-state': s });
        g.append(svgEl('rect', { x, y, width: W, height: H, rx: 8 }), svgEl('text', { x: x + W / 2, y: y + H / 2 + 4, 'text-anchor': 'middle' }, s));
        svg.append(g);
      }
      document.getElementById('machine').replaceChildren(svg);
    }

    function marker(id, color) {
      const m = svgEl('marker', { id, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' });
      m.append(svgEl('path', { d: 'M0,0 L10,5 L0,10 z', fill: color }));
      return m;
    }

    // -- steps and time travel --

    /** One timeline entry: when, the change, how long the state lasted, and the time-travel actions. */
    function timelineItem(t, step, next) {
      const lasted = next ? Date.parse(next.at) - Date.parse(t.at) : isTerminal(view) ? null : Date.now() - Date.parse(t.at);
      return el('li', { 'data-step': step, class: step === selected ? 'selected' : undefined },
        el('span', { class: 'mono' }, time(t.at)),
        ` ${t.from} → ${t.to} `,
        el('span', { class: 'muted' }, t.event),
        lasted === null ? null : el('span', { class: 'lasted' }, next ? ` ${t.to} for ${ms(lasted)}` : ` ${t.to} for ${ms(lasted)} so far`),
        ' ',
        el('button', { type: 'button', class: 'small', onclick: () => showStep(step) }, 'view'),
        el('label', { class: 'small' }, el('input', { type: 'radio', name: 'diff-from', value: step, 'aria-label': `diff from step ${step}` }), 'from'),
        el('label', { class: 'small' }, el('input', { type: 'radio', name: 'diff-to', value: step, 'aria-label': `diff to step ${step}` }), 'to'),
        isTerminal({ state: t.to, conversationOpen: false }) ? null : el('button', { type: 'button', class: 'small', onclick: () => fork(step) }, 'fork'),
        isTerminal({ state: t.to, conversationOpen: false }) ? null : el('button', { type: 'button', class: 'small', onclick: () => whatIfFrom(step) }, 'what if…'),
      );
    }

    /** Steps before those the run's state lists (it continued as new): read once from `/steps`, which walks the chain. */
    let earlier = null;
    let readingEarlier = false;

    function timeline(v) {
      view = v;
      const first = v.step - v.transitions.length + 1;
      if (first > 1 && earlier === null && !readingEarlier) {
        readingEarlier = true;
        api('GET', `${runPath}/steps`).then(
          (r) => {
            earlier = r.steps.filter((s) => s.step < first);
            timeline(view);
          },
          () => (earlier = []),
        );
      }
      const own = v.transitions.map((t, i) => ({ ...t, step: first + i }));
      const steps = [...(earlier ?? []).filter((s) => s.step < first), ...own];
      const checked = ['diff-from', 'diff-to'].map((name) => document.querySelector(`input[name=${name}]:checked`)?.value);
      const items = steps.map((t, i) => timelineItem(t, t.step, steps[i + 1]));
      document.getElementById('timeline').setAttribute('start', String(steps[0]?.step ?? first));
      document.getElementById('timeline').replaceChildren(...items);
      ['diff-from', 'diff-to'].forEach((name, i) => {
        if (checked[i]) document.querySelector(`input[name=${name}][value="${checked[i]}"]`)?.setAttribute('checked', '');
      });
    }

    async function showStep(step) {
      selected = step;
      for (const li of document.querySelectorAll('#timeline li')) li.classList.toggle('selected', li.dataset.step === String(step));
      const out = document.getElementById('travel-result');
      try {
        const at = await api('GET', `${runPath}/steps/${step}?messages=true`);
        const fields = [
          ['state', at.state], ['step', String(at.step)], ['model calls', String(at.usage.modelCalls)], ['tool calls', String(at.toolCalls)],
          ['tokens', String(at.usage.totalTokens)], ['cost', cost(at.usage.costUsd)], ['messages', String(at.messageCount)],
        ];
        out.replaceChildren(
          el('h3', {}, `State at step ${step}`),
          el('dl', { class: 'at-step' }, ...fields.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
          at.partialText || at.lastText ? el('pre', { class: 'at-text' }, at.partialText || at.lastText) : null,
          el('div', { class: 'conversation' }, ...conversation(at.messages ?? [])),
        );
      } catch (err) {
        showError(out, err, `step ${step}: `);
      }
    }

    async function diff() {
      const out = document.getElementById('travel-result');
      const from = document.querySelector('input[name=diff-from]:checked')?.value;
      const to = document.querySelector('input[name=diff-to]:checked')?.value;
      if (from === undefined || to === undefined) {
        out.replaceChildren(el('p', { class: 'error' }, 'pick a "from" step and a "to" step'));
        return;
      }
      try {
        const d = await api('GET', `${runPath}/diff?from=${from}&to=${to}`);
        out.replaceChildren(el('h3', {}, `Changes from step ${from} to step ${to}`), changesTable('diff', d.changes, 'before', 'after'));
      } catch (err) {
        showError(out, err, 'diff: ');
      }
    }

    async function fork(step) {
      const out = document.getElementById('travel-result');
      try {
        const forked = await api('POST', `${runPath}/fork`, { fromStep: step });
        out.replaceChildren(el('p', { 'data-testid': 'forked' }, `Forked from step ${step}: `, runLink(forked.workflowId)));
        loadRelated();
      } catch (err) {
        showError(out, err, `fork from step ${step}: `);
      }
    }

    /** A diff's changes, one row a path: what changed, and the value on each side (`before`/`after`). */
    function changesTable(id, changes, left, right) {
      const show = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));
      return el('table', { id },
        el('thead', {}, el('tr', {}, el('th', {}, 'path'), el('th', {}, 'change'), el('th', {}, left), el('th', {}, right))),
        el('tbody', {}, ...changes.map((c) => el('tr', { class: `diff-${c.kind}`, 'data-path': c.path }, el('td', { class: 'mono' }, c.path), el('td', {}, c.kind), el('td', { class: 'mono' }, show(c.before)), el('td', { class: 'mono' }, show(c.after))))),
      );
    }

    // -- what-if forks --

    /** Opens the what-if form at a step of the timeline. */
    function whatIfFrom(step) {
      const details = document.getElementById('what-if');
      details.open = true;
      document.getElementById('what-if-form').elements.fromStep.value = String(step);
      details.scrollIntoView({ block: 'nearest' });
    }

    /** The conversation's tool calls, to pick the one whose result the fork replaces (the choice survives a redraw). */
    function drawToolCallChoices(messages) {
      const select = document.getElementById('what-if-form').elements.toolCallId;
      const chosen = select.value;
      const calls = messages.filter((m) => m.role === 'assistant').flatMap((m) => m.toolCalls ?? []);
      select.replaceChildren(el('option', { value: '' }, 'no tool result edited'), ...calls.map((c) => el('option', { value: c.id }, `${c.name} (${c.id})`)));
      select.value = calls.some((c) => c.id === chosen) ? chosen : '';
    }

    /** `POST /fork`'s body (ForkBodySchema): each field filled in is an edit; the gateway checks the rest and names what is wrong. */
    function whatIfBody(f) {
      const edits = {};
      if (f.toolCallId.value) edits.toolResults = { [f.toolCallId.value]: f.toolResult.value };
      for (const name of ['message', 'model', 'systemPrompt']) if (f[name].value.trim()) edits[name] = f[name].value.trim();
      return { fromStep: Number(f.fromStep.value), ...(Object.keys(edits).length ? { edits } : {}), replay: f.replay.checked };
    }

    document.getElementById('what-if-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const f = event.target.elements;
      const result = document.getElementById('what-if-result');
      result.textContent = '';
      if (!f.toolCallId.value && f.toolResult.value) {
        result.textContent = 'not forked: pick the tool call whose result "New tool result" replaces';
        return;
      }
      try {
        const forked = await api('POST', `${runPath}/fork`, whatIfBody(f));
        document.getElementById('travel-result').replaceChildren(
          el('p', { 'data-testid': 'forked' }, `Forked from step ${forked.forkedFrom.step}: `, runLink(forked.workflowId), ' ',
            el('button', { type: 'button', class: 'small', onclick: () => compare(workflowId, forked.workflowId) }, 'compare side by side')),
        );
        loadRelated();
      } catch (err) {
        showError(result, err, 'not forked: ');
      }
    });

    /** Two runs side by side, each as it is now: a few figures of each, then every difference by path (`/diff?against=`). */
    async function compare(a, b) {
      const out = document.getElementById('travel-result');
      const runPathOf = (id) => `/v1/runs/${encodeURIComponent(id)}`;
      try {
        const [d, left, right] = await Promise.all([api('GET', `${runPathOf(a)}/diff?against=${encodeURIComponent(b)}`), api('GET', runPathOf(a)), api('GET', runPathOf(b))]);
        const figures = (v) => ({
          state: v.state, answer: v.answer ?? v.lastText ?? '', 'model calls': String(v.usage.modelCalls), 'of them replayed': String(v.usage.replayedCalls ?? 0),
          'tool calls': String(v.toolCalls), tokens: String(v.usage.totalTokens), cost: cost(v.usage.costUsd),
        });
        const [fa, fb] = [figures(left), figures(right)];
        out.replaceChildren(
          el('h3', {}, 'Side by side'),
          el('table', { id: 'side-by-side' },
            el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, runLink(a)), el('th', {}, runLink(b)))),
            el('tbody', {}, ...Object.keys(fa).map((name) =>
              el('tr', { 'data-field': name, class: fa[name] === fb[name] ? undefined : 'differs' }, el('th', {}, name), el('td', { class: 'mono' }, fa[name]), el('td', { class: 'mono' }, fb[name])))),
          ),
          el('h3', {}, `${d.changes.length} difference${d.changes.length === 1 ? '' : 's'} by path`),
          changesTable('runs-diff', d.changes, a, b),
        );
      } catch (err) {
        showError(out, err, 'compare: ');
      }
    }

    document.getElementById('compare-origin').addEventListener('click', () => view?.origin && compare(view.origin.workflowId, workflowId));
    document.getElementById('diff-button').addEventListener('click', diff);
    return { update, timeline };
  }

  function svgEl(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs ?? {})) node.setAttribute(k, String(v));
    for (const c of children) node.append(typeof c === 'string' ? document.createTextNode(c) : c);
    return node;
  }

  return { searchParams, listRow, wireSearch, wireStartForm, runDetails };
})();
