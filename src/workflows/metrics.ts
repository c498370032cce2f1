/**
 * Workflow-side metrics on the SDK's workflow metric meter: emitted through a sink, never during replay, so a
 * replayed or resumed run does not count its past again. Workflow code: deterministic, no Node built-ins.
 */
import { metricMeter } from '@temporalio/workflow';
import { STATE_DURATION_METRIC } from '../common/constants';

type Histogram = ReturnType<typeof metricMeter.createHistogram>;
/** Made at the run's first transition and kept: this module is loaded once per run, so the histogram is the run's. */
let stateDuration: Histogram | undefined;

/** How long the run stayed in `state`, recorded when it leaves it (workflow time, so whole workflow tasks). */
export function recordStateDuration(state: string, since: string, until: string): void {
  const ms = Math.max(0, Date.parse(until) - Date.parse(since));
  stateDuration ??= metricMeter.createHistogram(STATE_DURATION_METRIC, 'int', 'ms', 'Time spent in each agent state');
  stateDuration.record(ms, { state });
}
