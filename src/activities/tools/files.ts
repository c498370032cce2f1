/** File tools confined to the agent's workspace: no path may resolve, or link, outside it. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineTool, type Tool } from './registry';

const MAX_PATH_LENGTH = 1_024;
const MAX_READ_BYTES = 200_000;
const MAX_LIST_ENTRIES = 500;

const RelativePath = z.string().min(1).max(MAX_PATH_LENGTH).describe('Path relative to the workspace root');

/**
 * Resolve `relative` inside `root`, following symlinks, or throw an error that says why not. `realRoot`: `root`'s own
 * real path, when the caller has it already (fileTools resolves it once).
 */
export async function resolveInWorkspace(root: string, relative: string, realRoot?: string): Promise<string> {
  if (relative.length > MAX_PATH_LENGTH) throw new Error(`path is longer than ${MAX_PATH_LENGTH} characters`);
  if (relative.includes('\0')) throw new Error('path contains a NUL character');
  if (path.isAbsolute(relative)) throw new Error(`absolute paths are not allowed: ${relative}`);
  const base = realRoot ?? (await fs.realpath(root));
  const target = path.resolve(base, relative);
  if (!isInside(base, target)) throw new Error(`path leaves the workspace: ${relative}`);
  // A path that is there (a read, the usual call) resolves in one call; one that is not yet follows the links of its
  // deepest part that is (a dangling link is there: its real path fails, as it should).
  const real = (await realpathIfThere(target)) ?? (await realpathOfMissing(target));
  if (!isInside(base, real)) throw new Error(`path leaves the workspace through a symbolic link: ${relative}`);
  return real;
}

const realpathIfThere = (p: string): Promise<string | undefined> =>
  fs.realpath(p).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
    throw err;
  });

async function realpathOfMissing(target: string): Promise<string> {
  let existing = target;
  while (!(await exists(existing))) existing = path.dirname(existing);
  return path.join(await fs.realpath(existing), path.relative(existing, target));
}

const isInside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);
const exists = (p: string) => fs.lstat(p).then(() => true, () => false);

export function fileTools(workspace: string): Tool[] {
  const root = path.resolve(workspace);
  const ensureRoot = () => fs.mkdir(root, { recursive: true });
  // A read resolves paths from the root's real path, found once (three file system calls a read fewer, BENCHMARKS.md,
  // issue 26); a root that is gone meanwhile makes the read fail as a missing file would. Listing and writing still
  // make the root first.
  let realRoot: Promise<string> | undefined;
  const rootForReads = (): Promise<string> =>
    (realRoot ??= ensureRoot()
      .then(() => fs.realpath(root))
      .catch((err: unknown) => {
        realRoot = undefined; // tried again by the next call
        throw err;
      }));
  return [
    defineTool({
      name: 'listFiles',
      description: 'List the files and folders at a path in the workspace. Folders end with "/".',
      parameters: z.object({ path: RelativePath.default('.') }),
      sideEffects: false,
      local: true,
      async execute({ path: rel }) {
        await ensureRoot();
        const dir = await resolveInWorkspace(root, rel);
        const entries = await fs.readdir(dir, { withFileTypes: true });
        const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
        if (names.length === 0) return '(empty)';
        const more = names.length > MAX_LIST_ENTRIES ? `\n[${names.length - MAX_LIST_ENTRIES} more entries]` : '';
        return names.slice(0, MAX_LIST_ENTRIES).join('\n') + more;
      },
    }),
    defineTool({
      name: 'readFile',
      description: 'Read a UTF-8 text file from the workspace.',
      parameters: z.object({ path: RelativePath }),
      sideEffects: false,
      local: true,
      async execute({ path: rel }, { signal }) {
        const file = await resolveInWorkspace(root, rel, await rootForReads());
        const stat = await fs.stat(file);
        if (!stat.isFile()) throw new Error(`${rel} is not a file`);
        if (stat.size > MAX_READ_BYTES) throw new Error(`${rel} is ${stat.size} bytes; the limit is ${MAX_READ_BYTES}`);
        // A cancelled call stops reading between chunks.
        return fs.readFile(file, { encoding: 'utf8', signal });
      },
    }),
    defineTool({
      name: 'writeFile',
      description: 'Create or replace a UTF-8 text file in the workspace.',
      parameters: z.object({ path: RelativePath, content: z.string().max(MAX_READ_BYTES) }),
      sideEffects: true,
      // No signal: a write cut short by a cancellation would leave half a file behind; 200 KB ends soon enough.
      async execute({ path: rel, content }) {
        await ensureRoot();
        const file = await resolveInWorkspace(root, rel);
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(file, content, 'utf8');
        return `wrote ${Buffer.byteLength(content)} bytes to ${rel}`;
      },
    }),
  ];
}
