/** The chaos dev server: one port and one database file for its whole life, so a restart finds every run again. */
import { setTimeout as sleep } from 'node:timers/promises';
import { startDevServer, type DevServerHandle } from '../scripts/lib/dev-server';

export class ServerProcess {
  private handle: DevServerHandle | undefined;
  private killing = false;
  /** Called when the server ends without being killed by `kill9` or `stop`. */
  onUnplannedExit: (code: number | null) => void = () => undefined;

  constructor(
    private readonly opts: { port: number; dbFile: string; logFile: string; cliPath: string },
  ) {}

  get address(): string {
    return `127.0.0.1:${this.opts.port}`;
  }

  get alive(): boolean {
    return this.handle !== undefined && !this.killing;
  }

  async start(): Promise<void> {
    // The killed server's port can take a moment to be released.
    for (let attempt = 1; ; attempt++) {
      try {
        this.handle = await startDevServer({ port: this.opts.port, headless: true, dbFile: this.opts.dbFile, logFile: this.opts.logFile, cliPath: this.opts.cliPath });
        break;
      } catch (err) {
        if (attempt >= 10 || !/already in use/.test(String(err))) throw err;
        await sleep(500);
      }
    }
    const handle = this.handle;
    this.killing = false;
    void handle.exited.then((code) => {
      if (this.handle === handle && !this.killing) {
        this.handle = undefined;
        this.onUnplannedExit(code);
      }
    });
  }

  /** kill -9, and wait until the process is gone. */
  async kill9(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.killing = true;
    process.kill(handle.pid, 'SIGKILL');
    await handle.exited;
    await handle.stop(); // only unhooks the handle's exit listener now
    this.handle = undefined;
  }

  async stop(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.killing = true;
    await handle.stop();
    this.handle = undefined;
  }
}
