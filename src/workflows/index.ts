// Workflow entry point: every function exported here becomes a workflow type, so export only workflows.
export { agentRun } from './agent-run';
export { planExecute, agentPipeline } from './patterns';
