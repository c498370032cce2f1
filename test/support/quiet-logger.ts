/**
 * The SDK's logger for tests: warnings and errors print, except the ones a test causes on purpose (a classified
 * provider error, an invalid input, a refused signal), so that a test run shows only what is worth reading.
 */
import { ApplicationFailure, CancelledFailure, type LogLevel, type LogMetadata, type Logger } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { FailureType, ModelErrorType } from '../../src/common/failures';

/** Failure types the product raises by design: a test that provokes one expects it. */
const EXPECTED_TYPES = new Set<string>([...Object.values(FailureType), ...Object.values(ModelErrorType)]);

function expected(message: string, meta: LogMetadata | undefined): boolean {
  const error = meta?.error;
  // A run that fails is the outcome its test asserts; the workflow's error reaches the logger without its type.
  // (A failed workflow *task*, a bug, is logged under another message and still prints.)
  if (message === 'Workflow failed') return true;
  if (message === 'Activity failed') {
    // By name, not instanceof: a workflow's failure comes from the sandbox, with its own classes.
    const { name, type } = (error ?? {}) as { name?: string; type?: string };
    if (error instanceof CancelledFailure || name === 'CancelledFailure' || name === 'RetryableToolError') return true;
    return (error instanceof ApplicationFailure || name === 'ApplicationFailure') && EXPECTED_TYPES.has(type ?? '');
  }
  // A mock activity environment has no client to signal the run with; a refused event is what such a test checks.
  if (message === 'stream delta not delivered') return String(meta?.error).includes('No Client available');
  // A lifecycle hook that throws on purpose (test/critics-hooks-timeouts.test.ts) is logged, as it should be.
  if (typeof meta?.hook === 'string') return true;
  return message === 'event refused';
}

export class QuietLogger implements Logger {
  private readonly inner = new DefaultLogger('WARN');

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if ((level === 'WARN' || level === 'ERROR') && expected(message, meta)) return;
    this.inner.log(level, message, meta);
  }
  trace = (message: string, meta?: LogMetadata) => this.log('TRACE', message, meta);
  debug = (message: string, meta?: LogMetadata) => this.log('DEBUG', message, meta);
  info = (message: string, meta?: LogMetadata) => this.log('INFO', message, meta);
  warn = (message: string, meta?: LogMetadata) => this.log('WARN', message, meta);
  error = (message: string, meta?: LogMetadata) => this.log('ERROR', message, meta);
}
