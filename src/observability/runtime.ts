/**
 * The Temporal runtime of a worker process: log format and level (AGENT_LOG_FORMAT, AGENT_LOG_LEVEL) and the
 * Prometheus endpoint (AGENT_METRICS_PORT) that serves the SDK's metrics and the agent's own. A process installs
 * one runtime, before it creates any connection or worker.
 */
import type { LogMetadata } from '@temporalio/common';
import { DefaultLogger, Runtime, type LogEntry, type TelemetryOptions } from '@temporalio/worker';
import type { ObservabilitySettings } from '../config';
import { STATE_DURATION_METRIC } from '../common/constants';

/** States last from milliseconds (PROCESSING) to hours (AWAITING_APPROVAL, PAUSED); the SDK's default buckets stop at 10 s. */
const STATE_DURATION_BUCKETS_MS = [5, 25, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000];

/** One JSON object per line on stdout: time, level, message, then the SDK's fields (workflowId, runId, activityType, ...). */
export function jsonLogLine(entry: LogEntry): string {
  const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  return JSON.stringify({ time, level: entry.level, message: entry.message, ...entry.meta }, jsonSafe);
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

export function runtimeTelemetry(settings: ObservabilitySettings): TelemetryOptions {
  return {
    // In JSON mode the SDK core's own warnings go through the same logger, so every line parses.
    ...(settings.logFormat === 'json' ? { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } } : {}),
    ...(settings.metricsBindAddress
      ? {
          metrics: {
            prometheus: {
              bindAddress: settings.metricsBindAddress,
              histogramBucketOverrides: { [STATE_DURATION_METRIC]: STATE_DURATION_BUCKETS_MS },
            },
          },
        }
      : {}),
  };
}

export interface WorkerRuntime {
  runtime: Runtime;
  settings: ObservabilitySettings;
  /** A line for the operator: plain on stdout, or a JSON log line in JSON mode. */
  say(message: string, meta?: LogMetadata): void;
}

export function installWorkerRuntime(settings: ObservabilitySettings): WorkerRuntime {
  const json = settings.logFormat === 'json';
  const logger = new DefaultLogger(settings.logLevel, json ? (entry) => process.stdout.write(`${jsonLogLine(entry)}\n`) : undefined);
  const runtime = Runtime.install({ logger, telemetryOptions: runtimeTelemetry(settings) });
  return {
    runtime,
    settings,
    say: (message, meta) => (json ? runtime.logger.info(message, meta) : console.log(message)),
  };
}
