/**
 * The layout's rules, read from the code's own imports (type-only and dynamic ones included, which eslint's
 * import-x/no-cycle does not follow): no two files of src/ or bench/ import each other, directly or round a loop; no
 * two rooms of src/ do; and src/ keeps at most 5 loose files beside its rooms. eslint.config.mjs (ABOVE) says which
 * way each room may point.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
/** Not the bench's own code: other projects' peers and brokers, and scratch output. */
const SKIP = new Set(['peers', 'brokers', '.scratch', 'node_modules']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return SKIP.has(e.name) ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Each file's imports of the tree, `import type` and `import()` included. */
function importGraph(dirs: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of dirs.flatMap((d) => sources(path.join(ROOT, d)))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(file, [...new Set(importedFiles.map((f) => resolveImport(file, f.fileName)).filter((f): f is string => f !== undefined))]);
  }
  return graph;
}

/** The loops of a graph: its strongly connected components of more than one node, or one that imports itself. */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.map((f) => path.relative(ROOT, f)).sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const graph = importGraph(['src', 'bench']);

test('no files of src/ or bench/ import each other round a loop', () => {
  expect(graph.size).toBeGreaterThan(100);
  expect(circles(graph)).toEqual([]);
});

test('no rooms of src/ import each other', () => {
  const SRC = path.join(ROOT, 'src');
  const room = (file: string) => path.relative(SRC, file).split(path.sep)[0];
  const rooms = new Map<string, string[]>();
  for (const [file, imports] of graph) {
    if (!file.startsWith(SRC + path.sep)) continue;
    const from = room(file);
    const to = imports.filter((f) => f.startsWith(SRC + path.sep) && room(f) !== from).map(room);
    rooms.set(from, [...new Set([...(rooms.get(from) ?? []), ...to])]);
  }
  expect(circles(rooms)).toEqual([]);
});

test('src/ keeps at most 5 loose files beside its rooms', () => {
  const loose = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isFile());
  expect(loose.length).toBeLessThanOrEqual(5);
});
