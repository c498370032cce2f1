/*
 * The gateway's web page: the list of runs at /ui, one run at /ui/runs/<workflowId>. Plain browser JavaScript, no
 * build step; every value from the server goes into the page as text, never as HTML.
 *
 * What it shows is authoritative: the status, approvals, tool calls and timeline are drawn only from the run's
 * state (GET /v1/runs/:id), fetched when the page opens, after every (re)connection of the event stream and on every
 * event that says the run moved; a run's page does not poll. The event stream (GET /v1/runs/:id/events) pushes the
 * text as it streams, and is resumed with Last-Event-ID after a drop, so the text is built from its events alone,
 * each once. A `gap` (events lost to this page) redraws everything, text included, from the state it carries; a
 * `degraded` stream (the gateway follows the run by polling its state) is shown as such. So after a reconnect the
 * page shows the run as it is, not as it was when the connection broke.
 */
'use strict';

const TOKEN_KEY = 'durable-agent-worker.gateway-token';
const STATES = ['IDLE', 'PLANNING', 'STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'AWAITING_APPROVAL', 'CRITIQUE', 'COMPACTING', 'PAUSED', 'COMPLETED', 'FAILED', 'ABORTED'];
const TERMINAL = ['COMPLETED', 'FAILED', 'ABORTED'];
const POLL_MS = 2000;
const RECONNECT_MS = 1000;
/** A stream silent this long (the gateway sends a heartbeat every 15 s by default) is taken as stuck and reopened. */
const STALL_MS = 45_000;

const $ = (id) => document.getElementById(id);

/** An element with text children (strings become text nodes) and attributes. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
  return node;
}

const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '');
const isTerminal = (view) => TERMINAL.includes(view.state) && !view.conversationOpen;

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** A JSON route of the gateway; its `{ error: { code, message } }` becomes an ApiError. A 401 asks for the token. */
async function api(method, path, body) {
  const headers = { accept: 'application/json', ...authHeaders() };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const error = new ApiError(res.status, data?.error?.code ?? 'http_error', data?.error?.message ?? `HTTP ${res.status}`);
    if (res.status === 401) askForToken(error.message);
    throw error;
  }
  return data;
}

// ---- the token -------------------------------------------------------------------------------------------------

let started = false;

/**
 * A sign-in link (`/ui?token=<JWT>`, from the page that signed the user in) hands the page its token: kept for the
 * tab, then taken out of the address, so that it stays in no history entry or bookmark.
 */
function takeTokenFromUrl() {
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token === null) return;
  if (token.trim()) sessionStorage.setItem(TOKEN_KEY, token.trim());
  url.searchParams.delete('token');
  history.replaceState(null, '', url.pathname + url.search + url.hash);
}

function askForToken(message) {
  clearConnection();
  $('login').hidden = false;
  $('login-error').textContent = sessionStorage.getItem(TOKEN_KEY) ? message : '';
  $('list-page').hidden = true;
  $('run-page').hidden = true;
  $('token').focus();
}

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('login').hidden = true;
  if (started) location.reload();
  else start();
});

// ---- the list of runs --------------------------------------------------------------------------------------------

function listPage() {
  const filter = $('state-filter');
  for (const state of STATES) filter.append(el('option', { value: state }, state));
  filter.value = new URLSearchParams(location.search).get('state') ?? '';
  filter.addEventListener('change', () => {
    history.replaceState(null, '', filter.value ? `/ui?state=${filter.value}` : '/ui');
    refresh();
  });

  /** When the list last arrived: the stale notice says so once, however many polls fail. */
  let updatedAt = null;

  async function refresh() {
    const query = RunViews.searchParams(new URLSearchParams({ limit: '100' }));
    if (filter.value) query.set('state', filter.value);
    try {
      const { runs } = await api('GET', `/v1/runs?${query}`);
      $('list-page').hidden = false;
      const rows = runs.map(RunViews.listRow);
      document.querySelector('#runs tbody').replaceChildren(...rows);
      $('list-empty').hidden = rows.length > 0;
      updatedAt = new Date().toLocaleTimeString();
      $('list-updated').textContent = `updated ${updatedAt}`;
      $('list-updated').classList.remove('stale');
      setConnection('live', 'connected');
    } catch (err) {
      if (err.status === 401) return;
      // One notice, replaced on each failed poll, beside the time of the last list that arrived.
      $('list-updated').textContent = updatedAt ? `updated ${updatedAt}; ${offlineText(err)}` : offlineText(err);
      $('list-updated').classList.add('stale');
      setConnection('offline', offlineText(err));
    }
  }
  RunViews.wireSearch(refresh);
  RunViews.wireStartForm();
  refresh();
  setInterval(refresh, POLL_MS);
}

// ---- one run -----------------------------------------------------------------------------------------------------

function runPage(workflowId) {
  const runPath = `/v1/runs/${encodeURIComponent(workflowId)}`;
  $('crumb').textContent = ` / ${workflowId}`;
  document.title = `${workflowId} · agent run`;

  /** The latest state view: the page's one source of truth for everything but the streaming text. */
  let view = null;
  /** The streamed text, from the stream's events: whose call and attempt it is, and the text. */
  let text = { key: '', value: '' };
  let approvalsKey = null;
  let refreshing = null;
  let again = false;
  /** The stream's resume cursor, and whether following is over (the run ended or is gone). */
  let lastEventId = null;
  let stopped = false;
  /** When the state last arrived: the stale notice says "as of" this, once, however many polls fail. */
  let updatedAt = null;
  /** The conversation, the machine, activities, links and time travel (views.js). */
  const details = RunViews.runDetails(runPath, workflowId);

  /** Fetches the state and redraws; calls made while one is in flight run once more after it, never in parallel. */
  function refreshState() {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      try {
        do {
          again = false;
          render(await api('GET', runPath));
        } while (again);
      } catch (err) {
        if (err.status === 404) showGone(err.message);
        else if (err.status !== 401) markStale(err);
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  }

  function render(next) {
    view = next;
    $('run-page').hidden = false;
    const state = $('state');
    state.textContent = view.state;
    state.className = `state state-${view.state}`;
    $('state-since').textContent = `since ${time(view.stateSince)} · step ${view.step}`;
    updatedAt = new Date().toLocaleTimeString();
    $('updated').textContent = `as of ${updatedAt}`;
    $('updated').classList.remove('stale');
    clearOfflineErrors();

    $('stored').hidden = !view.stored;
    if (view.stored) $('stored').textContent = `Stored copy from ${time(view.stored.at)}: ${view.stored.reason}`;
    const retrying = view.retrying ?? [];
    $('retrying').hidden = retrying.length === 0;
    $('retrying').textContent = retrying
      .map((r) => `${r.activity}: attempt ${r.attempt}` + (r.lastFailure ? ` after ${r.lastFailure.type ?? 'an error'}: ${r.lastFailure.message}` : '') + (r.nextAttemptAt ? `, next at ${time(r.nextAttemptAt)}` : ''))
      .join('; ');
    // The run's own word (its model call's heartbeats): its worker cannot publish, whatever this page's stream says.
    $('degraded').hidden = !view.degraded;
    $('degraded').textContent = view.degraded ? 'degraded: the worker of this model call cannot publish to the stream channel; its text arrives by polling, with a delay' : '';

    // Model calls are those answered; loops count model steps as they start (limits.maxLoops). A run refused for
    // bad input applied no limits.
    const refused = view.transitions.some((t) => t.event === 'INVALID_INPUT');
    const ofLimit = (count, limit) => (refused ? `${count}` : `${count} / ${limit}`);
    const counters = [
      ['model calls', `${view.usage.modelCalls}`],
      ['loops', ofLimit(view.loops, view.limits.maxLoops)],
      ['tool calls', ofLimit(view.toolCalls, view.limits.maxToolCalls)],
      ['tokens', `${view.usage.totalTokens}`],
      ['cost', `$${view.usage.costUsd.toFixed(4)}`],
      ['model', view.model ?? "the worker's default"],
    ];
    if (view.lastModel && view.lastModel !== view.model) counters.push(['answered by', view.lastModel]);
    if (refused) counters.push(['limits', 'none: the input was refused']);
    if (view.state === 'PAUSED' && view.resumeTo) counters.push(['resumes in', view.resumeTo]);
    if (view.pauseRequested) counters.push(['pause', 'requested']);
    if (view.state === 'PAUSED' && view.pausedDeadline) counters.push(['aborted at', time(view.pausedDeadline)]);
    $('counters').replaceChildren(...counters.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
    renderModelSwitches();
    renderPlan();
    showLine($('reason'), view.reason && `Reason: ${view.reason}`);
    showLine($('last-error'), view.lastError && `Last error: ${view.lastError}`);

    const ended = isTerminal(view);
    $('pause').disabled = ended || view.state === 'PAUSED' || view.pauseRequested;
    $('resume').disabled = ended || view.state !== 'PAUSED';
    $('abort').disabled = ended;
    $('abort-reason').disabled = ended;
    for (const id of ['message', 'send', 'interrupt']) $(id).disabled = ended;

    const reminder = view.state === 'AWAITING_APPROVAL' ? view.approvalReminder : null;
    const then = reminder && (reminder.onTimeout === 'reject' ? 'rejects the calls still waiting and goes on' : 'fails');
    showLine($('approval-reminder'), reminder && `Reminder: still waiting since ${time(view.stateSince)}; at ${time(reminder.deadline)} the run ${then}.`);

    renderApprovals();
    renderText();
    renderTools();
    renderTimeline();
    details.update(view);
  }

  function showLine(node, value) {
    node.hidden = !value;
    node.textContent = value || '';
  }

  function markStale(err) {
    $('updated').textContent = updatedAt ? `as of ${updatedAt}; ${offlineText(err)}` : offlineText(err);
    $('updated').classList.add('stale');
    setConnection('offline', offlineText(err));
  }

  /** No run has this id: nothing to steer, so the controls are off. */
  function showGone(message) {
    $('run-page').hidden = false;
    $('state').textContent = 'unknown run';
    $('state').className = 'state state-unknown';
    $('state-since').textContent = message;
    for (const id of ['pause', 'resume', 'abort', 'abort-reason', 'message', 'send', 'interrupt']) $(id).disabled = true;
    // No run: nothing ended, and there is no input, conversation or timeline to show empty.
    for (const section of $('run-page').querySelectorAll('section')) section.hidden = section.id !== 'status';
    stopped = true;
    clearConnection();
  }

  // Re-drawn only when the calls waiting change, so that an edit being typed is not wiped by the next refresh.
  function renderApprovals() {
    const pending = view.state === 'AWAITING_APPROVAL' ? view.pendingApproval.filter((p) => !p.decision) : [];
    const key = pending.map((p) => p.toolCallId).join('\n');
    if (key === approvalsKey) return;
    approvalsKey = key;
    $('approvals').hidden = pending.length === 0;
    $('approval-list').replaceChildren(...pending.map(approvalCard));
  }

  function approvalCard(p) {
    const args = el('textarea', { rows: 4, 'aria-label': `arguments of ${p.name}`, disabled: p.kind !== 'tool' || !p.parameters });
    args.value = p.kind === 'tool' ? prettyJson(p.arguments) : p.arguments;
    const feedback = el('input', { type: 'text', placeholder: 'feedback for the model (optional)', 'aria-label': `feedback on ${p.name}`, maxlength: 10000 });
    const result = el('span', { class: 'error' });
    const decide = async (approved) => {
      const body = { toolCallId: p.toolCallId, approved };
      if (feedback.value.trim()) body.feedback = feedback.value.trim();
      if (approved && p.kind === 'tool' && !args.disabled && args.value.trim() !== prettyJson(p.arguments).trim()) {
        try {
          body.arguments = JSON.parse(args.value);
        } catch (err) {
          result.textContent = `the arguments are not JSON: ${err.message}`;
          return;
        }
      }
      result.textContent = '';
      try {
        await api('POST', `${runPath}/approvals`, body);
        card.classList.add('decided');
      } catch (err) {
        showError(result, err);
      }
      await refreshState();
    };
    const card = el('div', { class: 'approval', 'data-tool-call-id': p.toolCallId },
      el('div', {}, el('strong', {}, p.kind === 'budget' ? 'Budget' : p.name), ' ', el('span', { class: 'muted' }, p.toolCallId)),
      args,
      feedback,
      el('div', {},
        el('button', { type: 'button', onclick: () => decide(true) }, 'Approve'),
        ' ',
        el('button', { type: 'button', class: 'danger', onclick: () => decide(false) }, 'Reject'),
        ' ',
        result,
      ),
    );
    return card;
  }

  function prettyJson(json) {
    try {
      return JSON.stringify(JSON.parse(json), null, 2);
    } catch {
      return json;
    }
  }

  /**
   * The text the stream brought; the state's text only until the stream has brought some (it is never merged with
   * the events', which would repeat what both have).
   */
  function renderText() {
    const shown = text.key ? text.value : view.partialText || (view.lastText ?? '');
    const call = text.key ? Number(text.key.split('.')[0]) : view.stream?.callNumber;
    $('text-title').textContent = view.answer !== null && shown === view.answer ? 'Answer' : call ? `Text of model call ${call}` : 'Text';
    $('live-text').textContent = shown;
  }

  /** A text event: the stream sends each part once (a resumed stream starts after Last-Event-ID), so it is appended. */
  function onText(event) {
    const key = `${event.callNumber}.${event.attempt}`;
    text = { key, value: (key === text.key ? text.value : '') + event.text };
    if (view) renderText();
  }

  /** Events were lost to this page: everything, the text too, is redrawn from the state the gap carries. */
  function onGap(data) {
    text = data.state.stream ? { key: `${data.state.stream.callNumber}.${data.state.stream.attempt}`, value: data.state.partialText } : { key: '', value: '' };
    showLine($('stream-note'), `Some events were lost to this page (${data.reason}); redrawn from the run's state.`);
    render(data.state);
  }

  /** A structured plan (`plan: 'steps'`): steps done of all, and each step with its status (views from before have none). */
  function renderPlan() {
    const steps = view.planSteps ?? null;
    $('plan').hidden = !steps;
    if (!steps) return;
    const { done, total, allDone } = view.planProgress;
    $('plan-progress').textContent = `Plan: ${done} of ${total} steps done${allDone ? ' (all done)' : ''}`;
    $('plan-steps').replaceChildren(
      ...steps.map((p) => el('li', { class: `plan-step plan-${p.status}`, 'data-status': p.status }, p.title, ' ', el('span', { class: 'tag' }, p.attempts ? `${p.status}, ${p.attempts} more attempt(s)` : p.status))),
    );
  }

  /** Each move to a fallback model: from which, to which, at which step, and the error that made the run move. */
  function renderModelSwitches() {
    const switches = view.modelSwitches ?? [];
    $('model-switches').hidden = switches.length === 0;
    $('model-switches').replaceChildren(
      ...switches.map((m) => el('li', { 'data-to': m.to }, `step ${m.step}: ${m.from ?? "the worker's default"} → ${m.to} `, el('span', { class: 'muted' }, m.error))),
    );
  }

  /** Who sent a control, as common/actor.ts `actorLabel` says it: `service`, `user alice (acme)`, `operator bob`. */
  const actorLabel = (a) => (!a || a.kind === 'service' ? 'service' : a.kind === 'user' ? `user ${a.sub}${a.tenant ? ` (${a.tenant})` : ''}` : `operator ${a.name}`);

  /** The worker's tool policy on a call it did not simply allow: denied, held for approval, or rewritten (docs/tool-policy.md). */
  const POLICY_TITLES = { deny: 'denied by the tool policy: never ran', approve: 'held for approval by the tool policy', rewrite: 'arguments rewritten by the tool policy' };

  function renderTools() {
    const rows = view.recentToolCalls.map((t) =>
      el('tr', { 'data-tool-call-id': t.toolCallId },
        el('td', {}, t.startStep),
        el('td', {}, t.name),
        el('td', { class: 'mono' }, t.arguments, t.edited ? el('span', { class: 'tag' }, 'edited') : null),
        el('td', {}, t.policy ? el('span', { class: `tag policy policy-${t.policy}`, 'data-policy': t.policy, title: POLICY_TITLES[t.policy] }, t.policy) : ''),
        el('td', t.rejected ? { 'data-rejected': 'true' } : {}, t.ok === null ? 'running…' : t.ok ? 'ok' : t.rejected ? 'rejected' : 'failed'),
        el('td', t.decidedBy ? { 'data-who': actorLabel(t.decidedBy), title: `decided at ${t.decidedAt ?? ''}` } : {}, t.decidedBy ? actorLabel(t.decidedBy) : ''),
        el('td', {}, t.endedAt ? `${Date.parse(t.endedAt) - Date.parse(t.startedAt)} ms` : ''),
        el('td', { class: 'mono' }, t.output ?? ''),
      ),
    );
    document.querySelector('#tools tbody').replaceChildren(...rows);
  }

  function renderTimeline() {
    details.timeline(view);
  }

  for (const name of ['pause', 'resume']) {
    $(name).addEventListener('click', () => control(name, undefined));
  }
  $('abort').addEventListener('click', () => {
    const reason = $('abort-reason').value.trim();
    control('abort', reason ? { reason } : {});
  });

  $('send').addEventListener('click', () => sendMessage(false));
  $('interrupt').addEventListener('click', () => sendMessage(true));

  /** POST messages; the answer says whether the run cut its work short for it, or queued it. */
  async function sendMessage(interrupt) {
    const text = $('message').value.trim();
    if (!text) {
      $('message-result').textContent = 'write a message first';
      return;
    }
    try {
      const sent = await api('POST', `${runPath}/messages`, interrupt ? { text, interrupt: true } : { text });
      $('message').value = '';
      $('message-result').textContent = sent.interrupted
        ? 'interrupted: the message goes with the next model call'
        : `message queued (${sent.queued} waiting for the next model call)`;
    } catch (err) {
      showError($('message-result'), err, 'not sent: ');
    }
    await refreshState();
  }

  async function control(name, body) {
    try {
      await api('POST', `${runPath}/${name}`, body);
      $('control-result').textContent = `${name} sent`;
    } catch (err) {
      showError($('control-result'), err, `${name} refused: `);
    }
    await refreshState();
  }

  // ---- the event stream: text as it streams, and a nudge to re-read the state on everything else ----

  /** The stream's fetch is aborted when nothing, not even a heartbeat, arrived for STALL_MS. */
  let stall = null;
  function watchdog(controller) {
    clearTimeout(stall);
    stall = setTimeout(() => controller.abort(new Error('the stream went silent')), STALL_MS);
  }

  async function follow() {
    while (!stopped) {
      const controller = new AbortController();
      try {
        const headers = { accept: 'text/event-stream', ...authHeaders() };
        if (lastEventId) headers['last-event-id'] = lastEventId;
        watchdog(controller);
        const res = await fetch(`${runPath}/events`, { headers, signal: controller.signal });
        if (!res.ok) {
          const data = await res.json().catch(() => null);
          if (res.status === 401) return askForToken(data?.error?.message ?? 'unauthorized');
          if (res.status === 404) return showGone(data?.error?.message ?? 'no such run');
          throw new Error(data?.error?.message ?? `HTTP ${res.status}`);
        }
        setConnection('live', 'following the run');
        showLine($('stream-note'), '');
        // What happened while the stream was down is in the state, not in the events the cursor skips.
        await refreshState();
        for await (const message of sseMessages(res.body, () => watchdog(controller))) {
          if (message.id) lastEventId = message.id;
          if (message.event === 'text') onText(message.data);
          else if (message.event === 'restart') {
            text = { key: `${message.data.callNumber}.${message.data.attempt}`, value: '' };
            if (view) renderText();
          }
          else if (message.event === 'gap') onGap(message.data);
          else if (message.event === 'stream') {
            // The gateway's stream channel cannot serve this run: it polls the state for the page instead.
            setConnection('degraded', `live stream degraded: ${message.data.reason}`);
            showLine($('stream-note'), `Live stream degraded (${message.data.reason}): following the run by its state, with a delay.`);
          } else if (message.event === 'end') {
            stopped = true;
            setConnection('ended', 'the run ended');
          } else if (message.event === 'error') {
            throw new Error(message.data?.error?.message ?? 'stream error');
          }
          if (message.event && message.event !== 'text' && message.event !== 'gap' && message.event !== 'stream') refreshState();
        }
      } catch (err) {
        if (stopped) continue;
        // No answer at all (fetch throws a TypeError): what the page shows is stale until a reconnect reads the state.
        if (err instanceof TypeError) markStale(err);
        setConnection('offline', `event stream lost (${err.message}); reconnecting`);
      } finally {
        clearTimeout(stall);
        controller.abort();
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
    await refreshState();
  }

  refreshState();
  follow();
}

/**
 * Server-Sent Events from a fetch body: `{ event, id, data }` per message; comments (heartbeats) are skipped.
 * `onBytes` is called whenever anything arrived, heartbeats included.
 */
async function* sseMessages(body, onBytes) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onBytes?.();
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const message = {};
      for (const line of buffer.slice(0, end).split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') message.data = JSON.parse(value);
        else if (field === 'event' || field === 'id') message[field] = value;
      }
      buffer = buffer.slice(end + 2);
      if (message.event || message.data !== undefined) yield message;
    }
  }
}

/** An answer from the gateway is shown as it is; a failed fetch (no answer at all) says the gateway is unreachable. */
const offlineText = (err) => (err instanceof ApiError ? err.message : `cannot reach the gateway: ${err.message}`);

/** Errors of a request that got no answer are marked, and cleared once the gateway answers again. */
function showError(node, err, prefix = '') {
  node.textContent = prefix + offlineText(err);
  if (err instanceof ApiError) delete node.dataset.offline;
  else node.dataset.offline = 'true';
}

function clearOfflineErrors() {
  for (const node of document.querySelectorAll('[data-offline]')) {
    node.textContent = '';
    delete node.dataset.offline;
  }
}

function clearConnection() {
  const node = $('connection');
  node.className = 'connection';
  node.textContent = '';
  node.title = '';
}

function setConnection(kind, title) {
  const node = $('connection');
  node.className = `connection connection-${kind}`;
  node.textContent = kind;
  node.title = title;
}

function start() {
  started = true;
  takeTokenFromUrl();
  const match = /^\/ui\/runs\/([^/]+)\/?$/.exec(location.pathname);
  if (match) runPage(decodeURIComponent(match[1]));
  else listPage();
}

start();
