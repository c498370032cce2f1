/**
 * The layout's rules, read from the code's own imports (type-only and dynamic ones included, which eslint's
 * import-x/no-cycle does not follow): no two files of src/ or bench/ import each other, directly or round a loop; no
 * two rooms of src/ do; and src/'s root holds only the entry points (index.ts, worker.ts, client.ts), which the repository's own code imports
 * `createAgentWorker` and `AgentClient` from. eslint.config.mjs (ABOVE) says which
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

test("src/'s root holds only the entry points: index.ts (the package), worker.ts and client.ts", () => {
  const loose = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
  expect(loose.sort()).toEqual(['client.ts', 'index.ts', 'worker.ts']);
});

/** Each named binding a file imports, with the module it names: `import { a, type B as C } from 'x'`. */
function namedImports(file: string): Array<{ name: string; from: string }> {
  const found: Array<{ name: string; from: string }> = [];
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) found.push({ name: (element.propertyName ?? element.name).text, from: statement.moduleSpecifier.text });
  }
  return found;
}

test.each([
  ['createAgentWorker', 'src/worker.ts'],
  ['AgentClient', 'src/client.ts'],
])('%s is imported from its entry point, %s, everywhere in the repository', (name, entry) => {
  const entryFile = path.join(ROOT, entry);
  // The room behind the door (src/worker/, src/client/) uses its own parts directly.
  const room = entryFile.replace(/\.ts$/, path.sep);
  const importers = ['src', 'test', 'scripts', 'bench', 'chaos', 'examples'].flatMap((d) => sources(path.join(ROOT, d)));
  const uses = importers.flatMap((file) =>
    namedImports(file)
      .filter((i) => i.name === name && i.from.startsWith('.'))
      .map((i) => ({ file: path.relative(ROOT, file), resolved: resolveImport(file, i.from) })),
  );
  expect(uses.length).toBeGreaterThan(3);
  expect(uses.filter((u) => u.resolved !== entryFile && !path.join(ROOT, u.file).startsWith(room))).toEqual([]);
  expect(readFileSync(entryFile, 'utf8')).toMatch(new RegExp(`export \\{[^}]*\\b${name}\\b`));
});

test('src/machine, the pure machine, imports only itself, src/common and zod: nothing of the Temporal SDK, no Node built-in', () => {
  const MACHINE = path.join(ROOT, 'src', 'machine') + path.sep;
  const COMMON = path.join(ROOT, 'src', 'common') + path.sep;
  const files = sources(MACHINE);
  expect(files.length).toBeGreaterThan(10);
  const outside = files.flatMap((file) =>
    ts
      .preProcessFile(readFileSync(file, 'utf8'), true, true)
      .importedFiles.map((f) => f.fileName)
      .filter((spec) => (spec.startsWith('.') ? ![MACHINE, COMMON].some((room) => (resolveImport(file, spec) ?? '').startsWith(room)) : spec !== 'zod'))
      .map((spec) => `${path.relative(ROOT, file)} imports ${spec}`),
  );
  expect(outside).toEqual([]);
});
