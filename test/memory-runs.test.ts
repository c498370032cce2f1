/** Memory across runs on the real dev server with the embedded store, SQLite (test/support/memory-runs.ts). */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteMemoryStore } from '../src/memory/sqlite';
import { memoryRunsSuite } from './support/memory-runs';

memoryRunsSuite(() => new SqliteMemoryStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-memory-runs-')), 'memory.sqlite')));
