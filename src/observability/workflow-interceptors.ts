/**
 * The OpenTelemetry workflow interceptors, bundled into the workflow code when tracing is on (tracing.ts,
 * `WORKFLOW_TRACING_MODULE`): this module runs inside the sandbox. They come from the package's workflow entry,
 * `lib/workflow`, the path Temporal's sample uses in workflow code (samples-typescript, interceptors-opentelemetry):
 * the package's root also loads its worker and client halves, which the sandbox must not.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
