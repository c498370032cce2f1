/** The worker side: `createAgentWorker` and its options (worker.ts); plugin.ts, workflow-bundle.ts and check-deploy.ts beside it. */
export * from './worker';
