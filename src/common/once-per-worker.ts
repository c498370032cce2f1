/**
 * Values built once per worker instead of once per run. Workflow code is instantiated for every run (each run gets
 * its own module instances), so a module that builds zod schemas at load builds them again for every run and keeps
 * them for the run's life. The worker loads this module, and zod with it, once into its shared V8 context
 * (`preloadModules`, workflow-bundle.ts), so `oncePerWorker` answers every run the value the first one built, and zod's
 * own classes exist once. Together that is about half of what a cached run held (BENCHMARKS.md, issue 14).
 *
 * Only for values that hold no per-run state and that nothing mutates in a way that could change a later run's
 * behaviour: a zod schema qualifies (what it fills in lazily, on first use, are caches). The SDK freezes a preloaded
 * module's exports; the map below lives in the module's scope, which it does not reach. Outside a worker (clients,
 * the gateway, tests) it is a plain module-level cache.
 */
import { z } from 'zod';

const built = new Map<string, unknown>();

export function oncePerWorker<T>(key: string, build: () => T): T {
  if (built.has(key)) return built.get(key) as T;
  const value = build();
  built.set(key, value);
  return value;
}

// zod fills a few module-level caches of its own on first use (whether `new Function` is allowed, for its compiled
// object parser). A preloaded module is frozen once loaded, so they are filled now, while it still can be.
z.object({ warm: z.string() }).safeParse({ warm: '' });

// The parts of zod the workflow code uses beyond schemas.js are loaded here too, into the shared context: the bundler
// loads only the modules a file names (`z.object` is schemas.js), and a module a run loads first is loaded again by
// every run (`z.fromJSONSchema` and `z.iso`, with zod's checks: 0.5 ms a run, BENCHMARKS.md, issue 26).
z.fromJSONSchema({ type: 'string' }).safeParse('');
z.iso.datetime({ offset: true }).safeParse('2026-01-01T00:00:00Z');
