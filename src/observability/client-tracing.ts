/**
 * The client half of tracing, kept apart from tracing.ts so clients (the CLI, backend services) do not load the
 * OpenTelemetry SDK and exporters just to start runs.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';

/**
 * Interceptors that start a run's trace and pass it to the workflow in headers, when `enabled` (tracing configured by
 * AGENT_TRACING or OTEL_EXPORTER_OTLP_ENDPOINT). Spans use the process's global tracer provider: the worker's, or the
 * one a backend service registers; without one they are no-ops.
 */
export function tracingClientInterceptors(enabled: boolean): WorkflowClientInterceptor[] {
  if (!enabled) return [];
  // Loaded only when tracing is on: the package's root loads the OpenTelemetry SDK's trace modules too (~200 ms).
  const { OpenTelemetryWorkflowClientInterceptor } = require('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
  return [new OpenTelemetryWorkflowClientInterceptor()];
}
