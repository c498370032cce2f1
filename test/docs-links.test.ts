/**
 * The documents a newcomer reads: every relative link of README.md, BENCHMARKS.md, RELIABILITY.md, docs/ and
 * examples/ leads to a file that exists, and to a heading of it where the link names one (GitHub's anchors). The
 * README's Quick start is exactly the two lines that .ci/run runs.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : markdownFiles(p);
    return e.name.endsWith('.md') ? [p] : [];
  });
}

const withoutFences = (markdown: string) => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
/** The text outside fenced code blocks and inline code, where a link is a link. */
const prose = (markdown: string) => withoutFences(markdown).replace(/`[^`\n]*`/g, '');

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`; repeats get `-1`, `-2`. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, text] of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const plain = text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '').replace(/`/g, '');
    const slug = plain.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    found.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return found;
}

const files = [
  ...['README.md', 'BENCHMARKS.md', 'RELIABILITY.md'].map((f) => path.join(ROOT, f)),
  ...markdownFiles(path.join(ROOT, 'docs')),
  ...markdownFiles(path.join(ROOT, 'examples')),
];

test('every relative link of the documents leads to a file, and to a heading where it names one', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const [, target] of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked++;
      const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = rawPath ? path.resolve(path.dirname(file), decodeURIComponent(rawPath)) : file;
      const where = `${path.relative(ROOT, file)}: (${target})`;
      if (!existsSync(resolved)) broken.push(`${where} no such file`);
      else if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${where} no heading #${anchor} in ${path.relative(ROOT, resolved)}`);
      }
    }
  }
  expect(checked).toBeGreaterThan(50);
  expect(broken).toEqual([]);
});

test("the README's Quick start is two command lines, and .ci/run runs exactly them before the production tier", () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const quickStart = /^## Quick start\n+```bash\n([\s\S]*?)```/m.exec(readme)?.[1];
  const lines = (quickStart ?? '').split('\n').filter((l) => l.trim());
  expect(lines).toEqual(['npm install && npm start', 'npm test']);
  const commands = readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')
    .split('\n')
    .filter((l) => /^npm /.test(l))
    .map((l) => l.replace(/ --no-audit --no-fund/, ''));
  expect(commands).toEqual([...lines, 'npm run test:production']);
});

test('the anchor rule matches GitHub on the shapes these documents use', () => {
  expect([...anchors('# Durability and long runs\n## (a) Overhead, per step\n## The `state` query\n## Tests\n## Tests')]).toEqual([
    'durability-and-long-runs',
    'a-overhead-per-step',
    'the-state-query',
    'tests',
    'tests-1',
  ]);
});
