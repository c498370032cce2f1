/**
 * The worker process as the Docker image runs it: JavaScript (`node dist/bin/worker.js`), not TypeScript through tsx,
 * whose loader and on-the-fly transpiling add about half a second to a worker's start (bench (d)). The product's src/
 * and the bench's worker entry are transpiled file by file with the project's compiler options (as `npm run build`
 * emits them, without type checking or declarations) into bench/.scratch/compiled, in the same layout, so the
 * entry's relative paths (`../../src`) resolve there and its imports to the project's node_modules.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'bench/.scratch/compiled');

/** Whether a commit's src/ (today's without `srcDir`) has `file`. */
const srcHas = (srcDir: string | undefined, file: string): boolean => existsSync(path.join(srcDir ?? path.join(ROOT, 'src'), file));

/** Whether a commit's src/ has the worker entry's source-maps module (src/bin/source-maps.ts). */
export const hasSourceMapsEntry = (srcDir?: string): boolean => srcHas(srcDir, 'bin/source-maps.ts');

/** Whether a commit's src/ starts the SDK's workflow thread early and adopts it (src/worker/early-thread.ts, sdk-worker.ts). */
export const hasEarlyThread = (srcDir?: string): boolean => srcHas(srcDir, 'worker/early-thread.ts');

/** Whether a commit's src/ sets V8's old-generation growth in the worker's entry (src/worker/heap.ts). */
export const hasHeapTuning = (srcDir?: string): boolean => srcHas(srcDir, 'worker/heap.ts');

/**
 * The image's node flags (Dockerfile `CMD`) for a commit's code: none since the worker's entry turns source maps on
 * itself after the SDK loads (hasSourceMapsEntry), `--enable-source-maps` before.
 */
export const compiledNodeArgs = (srcDir?: string): string[] => (hasSourceMapsEntry(srcDir) ? [] : ['--enable-source-maps']);

const compiled = new Map<string, string>();

/**
 * Transpiles src/ (or `srcDir`, an earlier commit's, from `srcAt`) and the bench worker once per bench run; returns
 * the compiled worker entry, whose `../../src` is that code.
 */
export function compiledOursWorker(srcDir?: string): string {
  const done = compiled.get(srcDir ?? '');
  if (done) return done;
  const out = srcDir ? `${OUT}-${path.basename(srcDir)}` : OUT;
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile).config;
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT);
  // With their sources inlined, as the build's own maps: the image's worker reads them (compiledNodeArgs).
  const compilerOptions = { ...options, noEmit: false, sourceMap: false, inlineSourceMap: true, inlineSources: true };
  const src = srcDir ?? path.join(ROOT, 'src');
  // Emptied first: a file left from an earlier layout shadows the new one. After issue 29 moved src/worker.ts to
  // src/worker/worker.ts, a stale compiled src/worker.js kept answering `require('<src>/worker')` (a file wins over a
  // folder's index), so the bench ran the old worker's wiring beside today's activities until this was found.
  rmSync(out, { recursive: true, force: true });
  const files = [...tsFiles(src).map((f) => [f, path.join('src', path.relative(src, f))]), ...['bench/systems/ours-worker.ts', 'bench/lib/serve.ts'].map((f) => [path.join(ROOT, f), f])];
  for (const [file, relative] of files) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
    const target = path.join(out, relative).replace(/\.ts$/, '.js');
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  const entry = path.join(out, 'bench/systems/ours-worker.js');
  compiled.set(srcDir ?? '', entry);
  return entry;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}
