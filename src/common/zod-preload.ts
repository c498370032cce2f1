/**
 * zod, loaded once into the worker's shared V8 context (`preloadModules`, workflow-bundle.ts) instead of once per run.
 * Only zod's own modules are shared: every schema of the product is built by the run that uses it, in its own module
 * instances, so no run sees a value another run made. The SDK deep-freezes a preloaded module's exports once they are
 * loaded; this module exports nothing, turns zod's compiled parsers off, and fills zod's module-level caches first,
 * while they can still be filled.
 */
import { z } from 'zod';

// No compiled parsers in workflow code: each run builds its own schemas and parses a few values with each (its input
// once), and compiling an object's parser (`new Function`) costs more than it saves there: 7.4 to 5.8 ms to build and
// parse the run input's schemas once, and no slower a parse (0.05 ms) after. Set before the SDK freezes zod's config.
z.config({ jitless: true });

z.object({ warm: z.string() }).safeParse({ warm: '' });

// The bundler loads only the modules a file names (`z.object` is schemas.js): the parts of zod the workflow code uses
// beyond it are named here too, or every run would load them again (`z.fromJSONSchema` and `z.iso`, with zod's checks:
// 0.5 ms a run, BENCHMARKS.md, issue 26).
z.fromJSONSchema({ type: 'string' }).safeParse('');
z.iso.datetime({ offset: true }).safeParse('2026-01-01T00:00:00Z');
