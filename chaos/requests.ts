/**
 * Watches the scripted model's recorded requests: when each response completed or was cut off (the model
 * records only whether it was), and which are open at a given moment.
 */
import type { RecordedRequest, ScriptedModel } from '../src/scripted-model';

const POLL_MS = 100;

export interface TrackedRequest extends RecordedRequest {
  /** Index in arrival order, stable for the model's whole life. */
  index: number;
  /** First time the tracker saw the response complete (within about POLL_MS). */
  completedAt?: number;
  /** First time the tracker saw the client gone or the response cut off before it completed. */
  closedAt?: number;
}

const isCut = (r: RecordedRequest) => !r.completed && (r.closedByClient || r.fault !== undefined);

export class RequestTracker {
  private readonly completedAt: number[] = [];
  private readonly closedAt: number[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly model: ScriptedModel) {
    this.timer = setInterval(() => this.poll(), POLL_MS);
  }

  /** Indices of the requests in flight at this moment: the response is not complete and the client is still there. */
  openNow(): number[] {
    this.poll();
    return this.model.requests().flatMap((r, index) => (r.completed || isCut(r) ? [] : [index]));
  }

  all(): TrackedRequest[] {
    this.poll();
    return this.model.requests().map((r, index) => ({ ...r, index, completedAt: this.completedAt[index], closedAt: this.closedAt[index] }));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private poll(): void {
    const now = Date.now();
    this.model.requests().forEach((r, index) => {
      if (r.completed) this.completedAt[index] ??= now;
      else if (isCut(r)) this.closedAt[index] ??= now;
    });
  }
}
