/**
 * The product's activity slots and pollers (agentWorkerOptions) and its graceful shutdown, for the Temporal peers'
 * workers (temporal-floor, Temporal's ai-sdk), so the Temporal systems are compared tuned alike.
 */
export const PEER_WORKER_OPTIONS = {
  maxConcurrentActivityTaskExecutions: 1_000,
  maxConcurrentLocalActivityExecutions: 1_000,
  workflowTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
  activityTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
  shutdownGraceTime: '30 seconds',
} as const;
