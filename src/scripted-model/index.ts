/**
 * Scripted model: a local OpenAI-compatible Chat Completions server that answers from canned steps.
 * Node-only (tests, the offline demo); never import it from workflow code. It is not a real LLM.
 */
export { startScriptedModel, DEMO_SCRIPT_NAME } from './server';
export { demoScript, DEMO_NOTES_FILE } from './demo-script';
export { isErrorStep, isRecordedError, textOf } from './types';
export type {
  ErrorStep,
  OpenAIErrorSpec,
  RecordedErrorSpec,
  RecordedRequest,
  ResponseStep,
  Script,
  ScriptContext,
  ScriptStep,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedToolCall,
} from './types';
