/**
 * Content-addressed blob stores for claim-checked payloads.
 *
 * `BlobStore` is all the claim-check codec needs, so a cluster store plugs in by implementing its two methods:
 * - S3-compatible (AWS S3, MinIO, R2): `put` = `PutObject` with key `<prefix>/<ab>/<cd>/<hash>` (a `HeadObject` first
 *   skips blobs already there), `get` = `GetObject`, mapping `NoSuchKey` to `BlobNotFoundError`.
 * - PostgreSQL: a table `blobs (key text primary key, bytes bytea)`; `put` = `INSERT ... ON CONFLICT (key) DO NOTHING`,
 *   `get` = `SELECT bytes`, no row = `BlobNotFoundError`.
 * Every worker and every client that reads results must reach the same store; pass it to
 * `claimCheckDataConverter({ store })` (src/codec/index.ts). Blobs are immutable; `FsBlobStore.sweep` deletes those no
 * readable run names (retention.ts decides which those are), and a put of a blob already there touches it, so a run
 * that names an old blob anew keeps it from the sweep.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
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
  /**
   * The bytes stored under `key`; rejects with `BlobNotFoundError` when there are none. `at`: where `append` said it
   * put them; a store may then return what it finds there without checking it against `key`, so the caller checks.
   */
  get(key: string, at?: string): Promise<Uint8Array>;
  /**
   * Optional: stores a blob its caller can rebuild (as `put` with `fresh` and `durable: false`) where it costs least,
   * and answers where that is, for `get(key, at)`; `undefined`: under its key, as `put` stores it. The caller keeps
   * `at` beside the key: a conversation node's reference carries it in history.
   */
  append?(key: string, bytes: Uint8Array): Promise<string | undefined>;
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
  /**
   * `append` writes into pack files of this process (`packs/<host>-<pid>-...pack`), one write a blob, instead of one
   * new file a blob. @default true
   */
  packs?: boolean;
  /** A pack takes blobs until it holds this many bytes, or is an hour old; then the next one begins. @default 64 MiB */
  packMaxBytes?: number;
}

/** A pack takes blobs until it holds this much, or is this old; then the next one begins (so a sweep by age can drop it). */
const PACK_MAX_BYTES = 64 * 1024 * 1024;
const PACK_MAX_AGE_MS = 60 * 60_000;

/** The longest blob a place may name: a conversation node is kilobytes. */
const MAX_PACKED_BYTES = 1024 * 1024 * 1024;
/** Where `append` put a blob: `packs/<name>.pack@<offset>+<length>`. */
const PACKED_AT = /^packs\/([A-Za-z0-9._-]+\.pack)@(\d+)\+(\d+)$/;

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
  private readonly packs: boolean;
  private readonly packMaxBytes: number;
  /** Folders this process made or found: each `mkdir` is a file system call (a threadpool round trip) a blob. */
  private readonly folders = new Set<string>();
  /** The pack `append` writes into now. */
  private pack: Pack | undefined;

  constructor(dir: string, options: FsBlobStoreOptions = {}) {
    this.dir = path.resolve(dir);
    this.fsync = options.fsync ?? true;
    this.packs = options.packs ?? true;
    this.packMaxBytes = options.packMaxBytes ?? PACK_MAX_BYTES;
  }

  /** The file that holds `key`. Throws on a key that is not a sha256 hex digest, so no key can leave `dir`. */
  pathOf(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`invalid blob key ${JSON.stringify(key)}: expected a sha256 hex digest`);
    return path.join(this.dir, key.slice(0, 2), key);
  }

  /**
   * Deletes the blobs (by key) and pack files (by name) `live` does not hold and that were last written or touched
   * before `before` (epoch ms), and temporary files a crash left; `dryRun` only lists them (retention.ts).
   */
  sweep(live: { keys: ReadonlySet<string>; packs: ReadonlySet<string> }, options: { before: number; dryRun?: boolean }): Promise<SweepResult> {
    return sweepFolder(this.dir, live, options);
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
    // One already there is touched: the sweep keeps what was named lately, this new reference among it.
    if (!options.fresh && ((await touch(file)) || (await touch(this.legacyPathOf(key))))) return;
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

  /**
   * A blob its caller can rebuild (a conversation node), written into this process's pack at an offset of its own: one
   * write, where a file a blob costs an open, a write, a close and a new inode (BENCHMARKS.md, issue 26). Not flushed,
   * as `put` with `durable: false`: a crash of the host can lose or tear it, which its reader tells by the content.
   * Packs are named by host and process, so workers sharing the folder (one host, or a shared volume) never write into
   * each other's; any of them reads a blob back by `at`.
   */
  async append(key: string, bytes: Uint8Array): Promise<string | undefined> {
    if (!this.packs) {
      await this.put(key, bytes, { fresh: true, durable: false });
      return undefined;
    }
    this.pathOf(key); // the same check of the key as put's
    let pack = this.pack;
    if (!pack || pack.full(bytes.length)) {
      pack?.retire();
      const folder = path.join(this.dir, 'packs');
      // Made on the first pack, and again if the folder was wiped, as shard folders are.
      pack = this.pack = new Pack(this.packMaxBytes, (name) => this.inFolder(folder, () => openNew(path.join(folder, name))));
    }
    const offset = await pack.write(bytes).catch((err: unknown) => {
      if (this.pack === pack) {
        pack.retire();
        this.pack = undefined; // the next blob opens a new pack
      }
      throw err;
    });
    return `packs/${pack.name}@${offset}+${bytes.length}`;
  }

  async get(key: string, at?: string): Promise<Uint8Array> {
    const packed = at === undefined ? undefined : await this.readPacked(key, at);
    if (packed) return packed;
    const bytes = (await readIfThere(this.pathOf(key))) ?? (await readIfThere(this.legacyPathOf(key)));
    if (!bytes) throw new BlobNotFoundError(key, this.dir);
    return bytes;
  }

  /** The bytes at `at` (as much of them as the pack holds: a torn write reads short); undefined when the pack is gone. */
  private async readPacked(key: string, at: string): Promise<Uint8Array | undefined> {
    this.pathOf(key);
    const m = PACKED_AT.exec(at);
    // Not a place append gives (so nothing outside the packs' folder is read, and no absurd length is allocated): the
    // blob is not there.
    if (!m || Number(m[3]) > MAX_PACKED_BYTES) throw new BlobNotFoundError(key, `${this.dir} (invalid location ${JSON.stringify(at)}: expected packs/<name>.pack@<offset>+<length>)`);
    const handle = await open(path.join(this.dir, 'packs', m[1]), 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (!handle) return undefined;
    try {
      const bytes = new Uint8Array(Number(m[3]));
      let got = 0;
      while (got < bytes.length) {
        const { bytesRead } = await handle.read(bytes, got, bytes.length - got, Number(m[2]) + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return bytes.subarray(0, got);
    } finally {
      await handle.close();
    }
  }
}

/** What `FsBlobStore.sweep` deleted (or, dry, would delete) and kept. */
export interface SweepResult {
  /** Blob keys, pack files (`packs/<name>`) and left-over temporary files deleted. */
  deleted: string[];
  deletedBytes: number;
  /** Blobs and packs kept: named by a readable run, or written within the grace period. */
  kept: number;
}

/** `FsBlobStore.sweep` over the folder `dir`. */
async function sweepFolder(dir: string, live: { keys: ReadonlySet<string>; packs: ReadonlySet<string> }, { before, dryRun = false }: { before: number; dryRun?: boolean }): Promise<SweepResult> {
  const result: SweepResult = { deleted: [], deletedBytes: 0, kept: 0 };
  const consider = async (file: string, name: string, isLive: boolean, counts: boolean): Promise<void> => {
    if (isLive) {
      if (counts) result.kept++;
      return;
    }
    // Looked at again just before it goes: a put that touched it since the listing keeps it.
    const st = await stat(file).catch(() => undefined);
    if (!st?.isFile()) return;
    if (st.mtimeMs >= before) {
      if (counts) result.kept++;
      return;
    }
    if (!dryRun) await rm(file, { force: true });
    result.deleted.push(name);
    result.deletedBytes += st.size;
  };
  for (const shard of await entries(dir)) {
    if (!shard.isDirectory()) continue;
    const folder = path.join(dir, shard.name);
    if (shard.name === 'packs') {
      for (const f of await entries(folder)) if (f.isFile() && f.name.endsWith('.pack')) await consider(path.join(folder, f.name), `packs/${f.name}`, live.packs.has(f.name), true);
      continue;
    }
    if (!/^[0-9a-f]{2}$/.test(shard.name)) continue;
    for (const f of await entries(folder)) {
      const file = path.join(folder, f.name);
      if (f.isFile() && SHA256_HEX.test(f.name)) await consider(file, f.name, live.keys.has(f.name), true);
      else if (f.isFile() && f.name.startsWith('.') && f.name.endsWith('.tmp')) await consider(file, `${shard.name}/${f.name}`, false, false);
      // The layout before 2026-11-26: `ab/cd/<hash>`.
      else if (f.isDirectory() && /^[0-9a-f]{2}$/.test(f.name)) {
        for (const g of await entries(file)) if (g.isFile() && SHA256_HEX.test(g.name)) await consider(path.join(file, g.name), g.name, live.keys.has(g.name), true);
      }
    }
  }
  return result;
}

const entries = (dir: string) => readdir(dir, { withFileTypes: true }).catch(() => []);

/**
 * One pack file of this process. Each blob gets its offset when it is appended, so concurrent writes go to their own
 * ranges (positional writes) and need no lock. Opened on the first write; closed once retired and written out.
 * File system calls go through their callbacks, not `fs/promises`, which opens a `FileHandle` and chains promises.
 */
class Pack {
  readonly name = `${os.hostname().replace(/[^A-Za-z0-9.-]/g, '_')}-${process.pid}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}.pack`;
  private readonly openedAt = Date.now();
  private size = 0;
  private writing = 0;
  private retired = false;
  private fd: Promise<number> | undefined;

  constructor(
    private readonly maxBytes: number,
    /** Creates the file `name` and opens it for writing. */
    private readonly create: (name: string) => Promise<number>,
  ) {}

  /** Whether `bytes` more no longer belong here (but a pack always takes its first blob). */
  full(bytes: number): boolean {
    return (this.size > 0 && this.size + bytes > this.maxBytes) || Date.now() - this.openedAt > PACK_MAX_AGE_MS;
  }

  /** Appends `bytes`; resolves with their offset once they are written whole. */
  async write(bytes: Uint8Array): Promise<number> {
    const offset = this.size;
    this.size += bytes.length;
    this.writing++;
    try {
      const fd = await (this.fd ??= this.create(this.name));
      for (let done = 0; done < bytes.length; ) done += await pwrite(fd, bytes.subarray(done), offset + done);
      return offset;
    } finally {
      this.writing--;
      if (this.retired) this.closeWhenDone();
    }
  }

  /** No more blobs come here: the file closes once the writes under way end. */
  retire(): void {
    this.retired = true;
    this.closeWhenDone();
  }

  private closeWhenDone(): void {
    if (this.writing > 0 || !this.fd) return;
    const fd = this.fd;
    this.fd = undefined;
    fd.then((n) => fs.close(n, () => undefined), () => undefined);
  }
}

const openNew = (file: string) => new Promise<number>((resolve, reject) => fs.open(file, 'wx', (err, fd) => (err ? reject(err) : resolve(fd))));

const pwrite = (fd: number, bytes: Uint8Array, position: number) =>
  new Promise<number>((resolve, reject) => fs.write(fd, bytes, 0, bytes.length, position, (err, written) => (err ? reject(err) : resolve(written))));

/** Whether `file` is there; when it is, its modification time is now. */
/** A blob already there (a file: anything else under its name is no blob, and the put must fail writing it) is touched. */
const touch = async (file: string): Promise<boolean> => {
  const found = await stat(file).catch(() => undefined);
  if (!found?.isFile()) return false;
  const now = new Date();
  return utimes(file, now, now).then(() => true, () => false);
};

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
