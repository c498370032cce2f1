/**
 * Protobuf timestamps and durations (`google.protobuf.Timestamp`, `Duration`) to and from milliseconds, for code that
 * reads the server's raw messages. `seconds` is an int64: a `Long` as decoded, a number where a caller built it.
 */
import { google } from '@temporalio/proto';

/** A `Timestamp` (or `Duration`) as the server's messages carry it. */
export interface ProtoTime {
  seconds?: number | { toNumber(): number } | null;
  nanos?: number | null;
}

/** The `Date` a proto timestamp names; none for none. */
export function tsToDate(ts: ProtoTime | null | undefined): Date | undefined {
  if (ts == null) return undefined;
  const seconds = ts.seconds == null ? 0 : typeof ts.seconds === 'number' ? ts.seconds : ts.seconds.toNumber();
  return new Date(seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1_000_000));
}

/** A proto `Duration` of `ms` milliseconds (whole milliseconds, not negative). */
export function msToDuration(ms: number): google.protobuf.Duration {
  return google.protobuf.Duration.fromObject({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 });
}
