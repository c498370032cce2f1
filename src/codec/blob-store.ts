/**
 * Content-addressed blob stores for claim-checked payloads.
 *
 * `BlobStore` is all the claim-check codec needs, so a cluster store plugs in by implementing its two methods:
 * - S3-compatible (AWS S3, MinIO, R2): `put` = `PutObject` with key `<prefix>/<ab>/<cd>/<hash>` (a `HeadObject` first
 *   skips blobs already there), `get` = `GetObject`, mapping `NoSuchKey` to `BlobNotFoundError`.
 * - PostgreSQL: a table `blobs (key text primary key, bytes bytea)`; `put` = `INSERT ... ON CONFLICT (key) DO NOTHING`,
 *   `get` = `SELECT bytes`, no row = `BlobNotFoundError`.
 * Every worker and every client that reads results must reach the same store; pass it to
 * `claimCheckDataConverter({ store })` (src/codec/index.ts). Blobs are immutable and never deleted here: a sweep that
 * drops blobs older than the namespace's retention period is the store's concern.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where claim-checked payloads live, keyed by the sha256 hex of their bytes. Implementations must be idempotent. */
export interface BlobStore {
  /**
   * Stores `bytes` under `key`; storing a key that is already present is a no-op. `fresh`: the caller knows the key
   * is new (a conversation node), so a store may skip looking for it first; storing it twice must still be harmless.
   * `durable: false`: the caller does without the blob if a crash of the host loses or tears it, and checks what it
   * reads back (a conversation node: its hash; the run then sends the whole conversation), so a store need not flush
   * it to disk before it returns, nor make it appear whole at once. @default durable
   */
  put(key: string, bytes: Uint8Array, options?: { fresh?: boolean; durable?: boolean }): Promise<void>;
  /** The bytes stored under `key`; rejects with `BlobNotFoundError` when there are none. */
  get(key: string): Promise<Uint8Array>;
}

/** No blob is stored under this key: the store was wiped, or this process points at another store than the writer. */
export class BlobNotFoundError extends Error {
  override readonly name = 'BlobNotFoundError';
  constructor(
    readonly key: string,
    where: string,
  ) {
    super(`claim-check blob ${key} not found in ${where}`);
  }
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Options of `FsBlobStore`. */
export interface FsBlobStoreOptions {
  /** Flush each new blob (and its folder) to disk before it is referenced from history. @default true */
  fsync?: boolean;
}

/**
 * Blobs as files under `dir`, sharded as `ab/<hash>`: 256 folders, each made (and flushed into `dir`) once. Until
 * 2026-11-26 the layout was `ab/cd/<hash>`, 65,536 folders, so a fresh store or a new worker process made a folder for
 * nearly every conversation node, one `mkdir` a model call (BENCHMARKS.md, issue 26); blobs written then are still
 * read where they are. A blob appears under its final name only whole: it is written to a temporary file in the same
 * folder, flushed, then renamed; but for a `durable: false` put, which is written under its final name. Fits one
 * machine or a shared volume (NFS, EFS).
 */
export class FsBlobStore implements BlobStore {
  readonly dir: string;
  private readonly fsync: boolean;
  /** Folders this process made or found: each `mkdir` is a file system call (a threadpool round trip) a blob. */
  private readonly folders = new Set<string>();

  constructor(dir: string, options: FsBlobStoreOptions = {}) {
    this.dir = path.resolve(dir);
    this.fsync = options.fsync ?? true;
  }

  /** The file that holds `key`. Throws on a key that is not a sha256 hex digest, so no key can leave `dir`. */
  pathOf(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`invalid blob key ${JSON.stringify(key)}: expected a sha256 hex digest`);
    return path.join(this.dir, key.slice(0, 2), key);
  }

  /** Where the layout before 2026-11-26 (`ab/cd/<hash>`) kept `key`: read, never written. */
  private legacyPathOf(key: string): string {
    return path.join(this.dir, key.slice(0, 2), key.slice(2, 4), key);
  }

  async put(key: string, bytes: Uint8Array, options: { fresh?: boolean; durable?: boolean } = {}): Promise<void> {
    const file = this.pathOf(key);
    // Not flushed, a blob still reaches every process on this host (and, through the page cache, the volume's other
    // clients) once renamed; what a crash of the host can take is a blob its caller can rebuild.
    const sync = this.fsync && options.durable !== false;
    // A fresh key written again is replaced by the same bytes (atomically, but for `durable: false`): harmless, so no
    // stat first.
    if (!options.fresh && ((await exists(file)) || (await exists(this.legacyPathOf(key))))) return;
    const folder = path.dirname(file);
    if (!this.folders.has(folder)) await this.makeFolder(folder);
    // A blob its caller can rebuild is written under its final name at once: no temporary file, no rename (two file
    // system calls a model call, BENCHMARKS.md, issue 26). A reader that meets it half written, or torn by a crash,
    // must tell by its content (a conversation node's hash no longer matches its key), and a fresh put of the same
    // key writes it whole again.
    if (options.durable === false) return this.inFolder(folder, () => writeFile(file, bytes));
    // Same folder, so the rename stays on one file system and is atomic; a dot name never matches a key.
    const temp = path.join(folder, `.${key}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const handle = await this.inFolder(folder, () => open(temp, 'wx'));
      try {
        await handle.writeFile(bytes);
        if (sync) await handle.sync();
      } finally {
        await handle.close();
      }
      // A concurrent writer of the same key may win the race: its bytes are the same, so replacing them is harmless.
      await rename(temp, file);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    if (sync) await syncDir(folder);
  }

  /** Creates a file in `folder` with `create`; a folder removed since this process made it (a wiped store) is made again. */
  private inFolder<T>(folder: string, create: () => Promise<T>): Promise<T> {
    return create().catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      await this.makeFolder(folder);
      return create();
    });
  }

  /** Makes a shard folder; a new one is flushed into `dir`, or a crash could lose it with the blobs synced into it. */
  private async makeFolder(folder: string): Promise<void> {
    const made = await mkdir(folder, { recursive: true });
    if (made && this.fsync) await syncDir(path.dirname(folder));
    this.folders.add(folder);
  }

  async get(key: string): Promise<Uint8Array> {
    const bytes = (await readIfThere(this.pathOf(key))) ?? (await readIfThere(this.legacyPathOf(key)));
    if (!bytes) throw new BlobNotFoundError(key, this.dir);
    return bytes;
  }
}

const exists = (file: string) => stat(file).then((s) => s.isFile(), () => false);

const readIfThere = (file: string): Promise<Uint8Array | undefined> =>
  readFile(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });

/** Makes the rename itself durable; some platforms cannot open a folder for syncing, which is not an error. */
async function syncDir(folder: string): Promise<void> {
  const handle = await open(folder, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // EINVAL/EPERM on file systems without directory fsync
  } finally {
    await handle.close();
  }
}
