/**
 * OpenTelemetry tracing through Temporal's interceptors: client calls, the workflow (its spans leave the sandbox
 * through a sink) and every activity land in one trace per run. Off unless configured (src/config). Worker and
 * client side only: never import from workflow code.
 */
import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceBase from '@opentelemetry/sdk-trace-base';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type * as TraceNode from '@opentelemetry/sdk-trace-node';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
/*
 * The OpenTelemetry SDK, its OTLP exporter and Temporal's interceptors are loaded when tracing is first used, not
 * when this module is: they took about 250 ms of every worker's start (with --enable-source-maps), tracing on or off,
 * and a restarted worker's next step waits for its start (BENCHMARKS.md, issue 26). Types are imported as usual.
 */
const otel = () => ({
  ...(require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp),
  ...(require('@opentelemetry/resources') as typeof Resources),
  ...(require('@opentelemetry/sdk-trace-base') as typeof TraceBase),
  ...(require('@opentelemetry/sdk-trace-node') as typeof TraceNode),
});
const temporalOtel = () => require('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
import type { WorkerOptions } from '@temporalio/worker';
import { DEFAULT_SERVICE_NAME, type ObservabilitySettings } from '../config';

/** The package's workflow interceptors (workflow-interceptors.ts); bundled into the workflow code, so they run inside the sandbox. */
export const WORKFLOW_TRACING_MODULE = require.resolve('./workflow-interceptors');

export interface Tracing {
  spanProcessor: SpanProcessor;
  resource: Resource;
  tracer: Tracer;
  /** Flushes the spans still buffered and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Registers a global tracer provider (with the W3C propagator and async context the interceptors rely on to link
 * activity spans to their workflow) that sends every span, workflow spans included, to `spanProcessor`.
 */
export function startTracing(spanProcessor: SpanProcessor, serviceName = DEFAULT_SERVICE_NAME): Tracing {
  const { Resource, NodeTracerProvider } = otel();
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  return {
    spanProcessor,
    resource,
    tracer: provider.getTracer('durable-agent-worker'),
    async shutdown() {
      await provider.shutdown();
      // Undo register(), so a later startTracing in the same process (a test) takes effect.
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/**
 * The tracing the settings ask for: `console` prints spans; `otlp` (the default when OTEL_EXPORTER_OTLP_ENDPOINT is
 * set) sends them over OTLP/HTTP; `off`, none.
 */
export function configuredTracing({ tracing, serviceName }: Pick<ObservabilitySettings, 'tracing' | 'serviceName'>): Tracing | undefined {
  if (tracing === 'off') return undefined;
  const { BatchSpanProcessor, ConsoleSpanExporter, OTLPTraceExporter } = otel();
  // The OTLP exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and _HEADERS itself, by the OpenTelemetry spec.
  return startTracing(new BatchSpanProcessor(tracing === 'console' ? new ConsoleSpanExporter() : new OTLPTraceExporter()), serviceName);
}

/**
 * Worker options that trace workflows and activities. The workflow interceptors go into the bundle: with `bundling`
 * false the worker loads a prebuilt one, which has them compiled in (workflow-bundle.ts).
 */
export function tracingWorkerOptions(tracing: Tracing, bundling = true): Required<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const options = { tracer: tracing.tracer };
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, OpenTelemetryWorkflowClientInterceptor } = temporalOtel();
  return {
    interceptors: {
      workflowModules: bundling ? [WORKFLOW_TRACING_MODULE] : [],
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, options),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      // The client activities use: their spans join the run's trace too.
      client: { workflow: [new OpenTelemetryWorkflowClientInterceptor(options)] },
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
