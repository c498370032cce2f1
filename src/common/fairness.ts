/**
 * A tenant's place on Temporal's task queues: its fairness key. With fairness on in the server
 * (`matching.enableFairness`), a task queue dispatches the workflow and activity tasks of each key in proportion to
 * its weight, so one tenant's backlog does not hold another's tasks behind it (docs/quota.md, "Fair share"). Used by
 * the client (a run's start) and by the workflow (its activities and child runs); pure, for both.
 */

/** Temporal refuses a fairness key longer than this, in UTF-8 bytes. */
export const FAIRNESS_KEY_MAX_BYTES = 64;
/** A longer tenant keeps this many bytes of its name, then `~` and 8 hex digits of a hash of the whole. */
const KEPT_BYTES = FAIRNESS_KEY_MAX_BYTES - 9;

const utf8Bytes = (codePoint: number) => (codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4);

/** FNV-1a, 32 bits, over the UTF-16 code units: a stable short tag, not a secret. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** The fairness key of a tenant: its name, or for a name over 64 bytes its first 55 bytes, `~` and a hash of it all. */
export function fairnessKeyOf(tenant: string): string {
  let bytes = 0;
  let kept = '';
  for (const ch of tenant) {
    bytes += utf8Bytes(ch.codePointAt(0)!);
    if (bytes <= KEPT_BYTES) kept += ch;
  }
  return bytes <= FAIRNESS_KEY_MAX_BYTES ? tenant : `${kept}~${fnv1a(tenant)}`;
}

/**
 * A run's `priority` from which the fleet's provider budget (docs/quota.md) leaves room to runs of better priority:
 * 8 and 9, the background. A tenant that starts more runs a minute than its burst (`TenantBurst`) gets its further
 * runs here.
 */
export const BACKGROUND_PRIORITY = 8;

/**
 * The task queue of a fleet's background runs (`priority` 8 and 9), beside its own: each agent worker polls it through
 * a second `Worker` of few workflow task slots (`AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS`), so a batch's workflow tasks
 * never wait inside a worker in front of another tenant's. A client starts a background run there only while a worker
 * polls it (`AgentClient.start`); else on the fleet's queue, at Temporal's last priority key.
 */
export const backgroundTaskQueue = (taskQueue: string): string => `${taskQueue}-background`;

/**
 * A run's `priority` (0 first, 9 last, 5 by default) as Temporal's priority key (1 first, 5 last, 3 by default, the
 * server's five levels): 0-1 -> 1, 2-3 -> 2, 4-5 -> 3, 6-7 -> 4, 8-9 -> 5. The server dispatches a task queue's tasks by
 * priority key first, then fairly between fairness keys, on the worker's sticky queue too (where it does not share
 * fairly); `undefined` for a run that sets none (the server's default).
 */
export function temporalPriorityKey(priority: number | undefined): number | undefined {
  return priority === undefined ? undefined : Math.floor(Math.min(9, Math.max(0, priority)) / 2) + 1;
}

/** Temporal's priority of a task: its priority key and its tenant's fairness key, each absent when not set. */
export interface TaskPriority {
  priorityKey?: number;
  fairnessKey?: string;
}

/**
 * Start or schedule options that put work on the task queue as its tenant's (the fairness key) and at its priority;
 * none for a run of neither (the server's defaults). A run's activities and children inherit what is not set here.
 */
export function tenantPriority(tenant: string | null | undefined, priority?: number): { priority?: TaskPriority } {
  const priorityKey = temporalPriorityKey(priority);
  const task: TaskPriority = { ...(priorityKey !== undefined ? { priorityKey } : {}), ...(tenant ? { fairnessKey: fairnessKeyOf(tenant) } : {}) };
  return Object.keys(task).length ? { priority: task } : {};
}
