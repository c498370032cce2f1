/**
 * zod, loaded once into the worker's shared V8 context (`preloadModules`, workflow-bundle.ts) instead of once per run.
 * Only zod's own modules are shared: every schema of the product is built by the run that uses it, in its own module
 * instances, so no run sees a value another run made. The SDK deep-freezes a preloaded module's exports once they are
 * loaded; this module exports nothing and fills zod's module-level caches first (whether `new Function` is allowed,
 * for its compiled object parser), while they can still be filled.
 */
import { z } from 'zod';

z.object({ warm: z.string() }).safeParse({ warm: '' });

// The bundler loads only the modules a file names (`z.object` is schemas.js): the parts of zod the workflow code uses
// beyond it are named here too, or every run would load them again (`z.fromJSONSchema` and `z.iso`, with zod's checks:
// 0.5 ms a run, BENCHMARKS.md, issue 26).
z.fromJSONSchema({ type: 'string' }).safeParse('');
z.iso.datetime({ offset: true }).safeParse('2026-01-01T00:00:00Z');
