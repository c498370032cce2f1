/**
 * Stack traces mapped back to the product's TypeScript, without reading the SDK's source maps at every start. The
 * worker's entry imports this module first: it loads the Temporal SDK and the large libraries, then turns Node's
 * source maps on, so that only the modules loaded after it (the product's own, from dist/) have their maps read.
 * `node --enable-source-maps`, which the image ran before, read the maps of every SDK module too, in the main thread
 * and again in the workflow thread: 100-150 ms of each worker's start on a 2-core machine, about a seventh of what
 * a restarted worker spends before it polls (BENCHMARKS.md, issue 26, figure (d)). The SDK's frames stay as its
 * published JavaScript; the workflow sandbox maps its own stacks through the bundle's source map either way.
 */
import '@temporalio/worker';
import 'openai';
import 'zod';

process.setSourceMapsEnabled(true);
