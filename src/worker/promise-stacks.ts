/**
 * The SDK's promise hook, with the stacks formatted when they are read instead of when each promise is made.
 *
 * For the UI's "Stack Trace" tab (the `__stack_trace` and `__enhanced_stack_trace` queries), the SDK's workflow
 * thread captures a stack for every promise a workflow makes (@temporalio/worker 1.24, lib/workflow/vm-shared.js,
 * `GlobalHandlers.setPromiseHook`). It formats each one at once: every frame mapped through the bundle's source map,
 * a string built, three regular expressions run over it. Formatting is about four fifths of a capture's cost, and
 * almost every stack is thrown away unread when its promise settles a few microseconds later (BENCHMARKS.md, issue
 * 26). This hook captures the same stack (the frames V8 records when the `Error` is made) and formats it, with the
 * SDK's own formatter, the first time a query reads it. It also compiles the two lookups of a promise's realm once
 * per realm instead of once per promise.
 *
 * What the queries return is the same, character for character: `test/workflow.test.ts` compares both queries of a
 * waiting run on this thread and on the SDK's own. A promise made by `Promise.all`, `race`, `allSettled` or `any`
 * is still recognised when it is made, from its first two frames, exactly as the SDK's expressions read them.
 *
 * Installed by the product's workflow thread (workflow-thread-main.ts) before the SDK installs its hooks; a thread
 * the SDK starts itself (debug mode, a pool of threads) keeps the SDK's hook.
 */
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared';
import { cutoffStackTrace } from '@temporalio/common/lib/converter/failure-converter';
import { promiseHooks } from 'node:v8';

/** A stack as the SDK's queries read it (`StackTrace` of @temporalio/workflow). */
interface FileLocation {
  file_path?: string;
  function_name?: string;
  line?: number;
  column?: number;
  internal_code?: boolean;
}
interface Stack {
  readonly formatted: string;
  readonly structured: FileLocation[];
}
interface StackStore {
  promiseToStack: Map<Promise<unknown>, Stack>;
  childToParent: Map<Promise<unknown>, Set<Promise<unknown>>>;
}
interface Activator {
  promiseStackStore: StackStore;
  info: { runId: string };
}
type Prepare = (err: Error, callsites: NodeJS.CallSite[]) => unknown;
/** The SDK's `GlobalHandlers`, with the members it keeps private. */
interface Handlers {
  currentStackTrace: FileLocation[] | undefined;
  promiseHookInstalled: boolean;
  installed: boolean;
  setPromiseHook(): void;
  stopPromiseHook(): void;
}

/** The SDK's own expressions (vm-shared.js), applied to the same text. */
const HOOK_FRAMES = /^Error\n\s*at [^\n]+\n(\s*at initAll \(node:internal\/promise_hooks:\d+:\d+\)\n)?/;
const AGGREGATED = /^\s+at\sPromise\.then \(<anonymous>\)\n\s+at (Function|Promise)\.(race|all|allSettled|any) \(<anonymous>\)\n/;
const AGGREGATOR = /^\s+at (Function|Promise)\.(race|all|allSettled|any) \(<anonymous>\)\n/;
/** The lines the two expressions above begin with, alone. */
const THEN_LINE = /^\s+at\sPromise\.then \(<anonymous>\)$/;
const AGGREGATOR_LINE = /^\s+at (Function|Promise)\.(race|all|allSettled|any) \(<anonymous>\)$/;

/** The SDK's `cutoffStructuredStackTrace` (not exported; it keeps it in step with `cutoffStackTrace`). */
function cutoffStructured(stack: FileLocation[]): void {
  stack.shift();
  if (stack[0]?.function_name === 'initAll' && stack[0].file_path === 'node:internal/promise_hooks') stack.shift();
  const at = stack.findIndex(
    ({ function_name: fn, file_path: file }) =>
      fn && file && ((/^Activator\.\S+NextHandler$/.test(fn) && /.*[\\/]workflow[\\/](?:src|lib)[\\/]internals\.[jt]s$/.test(file)) || (/Script\.runInContext/.test(fn) && /^node:vm|vm\.js$/.test(file))),
  );
  if (at > -1) stack.splice(at);
}

/** Replaces the SDK's promise hook in this thread; call before the workflow thread gets its bundle. */
export function installLazyPromiseStacks(): void {
  const handlers = globalHandlers as unknown as Handlers;
  if (typeof handlers.setPromiseHook !== 'function' || handlers.installed) {
    throw new Error('lazy promise stacks: the SDK\'s workflow thread is not the one this was written for (@temporalio/worker 1.24)');
  }
  handlers.setPromiseHook = () => setLazyPromiseHook(handlers);
}

function setLazyPromiseHook(handlers: Handlers): void {
  // Installed by the SDK just before this (`overridePrepareStackTrace`): it maps a workflow's frames through the
  // bundle's source map and leaves the structured frames in `currentStackTrace`.
  const format = Error.prepareStackTrace as Prepare;
  let capturing = false;
  // While the hook captures, `.stack` is the frames themselves; they are formatted later with the SDK's formatter.
  Error.prepareStackTrace = (err, callsites) => (capturing ? callsites : format(err, callsites));

  /** A stack the hook captured, formatted as the SDK formats it when first read. */
  class LazyStack implements Stack {
    private text?: string;
    private frames?: FileLocation[];
    constructor(
      private readonly error: Error,
      private readonly callsites: NodeJS.CallSite[],
    ) {}
    get formatted(): string {
      return this.text ?? this.resolve().text;
    }
    get structured(): FileLocation[] {
      return this.frames ?? this.resolve().frames;
    }
    private resolve(): { text: string; frames: FileLocation[] } {
      handlers.currentStackTrace = undefined;
      const text = cutoffStackTrace((format(this.error, this.callsites) as string).replace(HOOK_FRAMES, ''));
      const frames = handlers.currentStackTrace ?? [];
      cutoffStructured(frames);
      this.text = text;
      this.frames = frames;
      return { text, frames };
    }
  }

  /** What the SDK's formatter writes for a frame with no file (a builtin such as `Promise.then`); null for any other. */
  const nativeLine = (callsite: NodeJS.CallSite | undefined) => (callsite && !callsite.getFileName() ? `    at ${callsite}` : null);

  // A realm's lookups, compiled once: the SDK compiles `return globalThis...` for each promise.
  const realms = new WeakMap<object, { activator: () => Activator | undefined; error: () => ErrorConstructor }>();
  const realmOf = (promise: Promise<unknown>) => {
    const make = promise.constructor.constructor as FunctionConstructor;
    let realm = realms.get(make);
    if (!realm) {
      realm = { activator: make('return globalThis.__TEMPORAL_ACTIVATOR__') as () => Activator | undefined, error: make('return globalThis.Error') as () => ErrorConstructor };
      realms.set(make, realm);
    }
    return realm;
  };

  let currentAggregation: Promise<unknown> | undefined;
  const stop = promiseHooks.createHook({
    init(made: Promise<unknown>, parent: Promise<unknown>) {
      let promise = made;
      const realm = realmOf(promise);
      const activator = realm.activator();
      if (!activator) return;
      const store = activator.promiseStackStore;
      (promise as Promise<unknown> & { runId?: string }).runId = activator.info.runId;
      const ErrorCtor = realm.error();
      // Made here, in the hook itself, so that its first frame is the hook's, as in the SDK's.
      const error = new ErrorCtor();
      capturing = true;
      let callsites: NodeJS.CallSite[];
      try {
        callsites = error.stack as unknown as NodeJS.CallSite[];
      } finally {
        capturing = false;
      }
      let stack: Stack = new LazyStack(error, callsites);
      // The SDK's expressions need the first two lines after the hook's frames; both name builtins, which have no file.
      const first = callsites[1]?.getFunctionName() === 'initAll' && callsites[1].getFileName() === 'node:internal/promise_hooks' ? 2 : 1;
      // Either expression can match only when the first line is an aggregator's, or `Promise.then` followed by an
      // aggregator's; only then is the stack formatted now, to run them on the very text the SDK would.
      const line0 = nativeLine(callsites[first]);
      if (line0 !== null && (AGGREGATOR_LINE.test(line0) || (THEN_LINE.test(line0) && AGGREGATOR_LINE.test(nativeLine(callsites[first + 1]) ?? '')))) {
        const { formatted } = stack;
        if (currentAggregation && AGGREGATED.test(formatted)) {
          // Skip internal promises created by the aggregator and link directly.
          promise = currentAggregation;
          stack = store.promiseToStack.get(currentAggregation)!; // Must exist
        } else if (AGGREGATOR.test(formatted)) {
          currentAggregation = promise;
        } else {
          currentAggregation = undefined;
        }
      } else {
        currentAggregation = undefined;
      }
      // As in the SDK: this happens.
      if (promise === parent) return;
      store.promiseToStack.set(promise, stack);
      // In case of Promise.race and friends we might have multiple "parents".
      const parents = store.childToParent.get(promise) ?? new Set();
      if (parent) parents.add(parent);
      store.childToParent.set(promise, parents);
    },
    settled(promise: Promise<unknown>) {
      const store = realmOf(promise).activator()?.promiseStackStore;
      if (!store) return;
      store.childToParent.delete(promise);
      store.promiseToStack.delete(promise);
    },
  });
  handlers.stopPromiseHook = () => stop();
  handlers.promiseHookInstalled = true;
}
