// Lint what matters: unawaited promises, type-only imports, workflow sandbox safety, import cycles.
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/**
 * The rooms of src/ from the top down (bin/ and index.ts above them all): each imports only rooms below it, so no arrow
 * runs up and no two rooms import each other. A room lists the rooms it must not import, type imports included.
 */
const ABOVE = {
  // The agent CLI: a shell over the client's entry (and config, the machine's table); only bin/ imports it.
  cli: ['worker', 'gateway'],
  gateway: ['cli'],
  // The library a backend embeds: nothing of the worker, the CLI or the gateway.
  client: ['worker', 'cli', 'gateway'],
  worker: ['client', 'cli', 'gateway'],
  observability: ['workflows', 'activities', 'worker', 'client', 'cli', 'gateway'],
  workflows: ['config', 'codec', 'stream', 'quota', 'observability', 'worker', 'client', 'cli', 'gateway', 'memory'],
  activities: ['workflows', 'config', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine'],
  config: ['activities', 'workflows', 'stream', 'quota', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine', 'memory'],
  codec: ['config', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine', 'memory'],
  stream: ['config', 'codec', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine', 'memory'],
  quota: ['config', 'codec', 'stream', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine', 'memory'],
  // Memory across runs: the store and its backends, on common/ alone; activities, the client, the CLI and the gateway use it.
  memory: ['config', 'codec', 'stream', 'quota', 'scripted-model', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine'],
  'scripted-model': ['config', 'codec', 'stream', 'quota', 'memory', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'machine'],
  // The pure machine: transition(snapshot, event, now) and what it reads; it stands on common/ alone.
  machine: ['config', 'codec', 'stream', 'quota', 'scripted-model', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'memory'],
  common: ['machine', 'config', 'codec', 'stream', 'quota', 'scripted-model', 'activities', 'workflows', 'observability', 'worker', 'client', 'cli', 'gateway', 'memory'],
};
const above = (room) => [
  {
    group: ABOVE[room].flatMap((r) => [`../${r}`, `../${r}/**`, `../../${r}`, `../../${r}/**`, `../../../${r}`, `../../../${r}/**`]),
    message: `src/${room} imports only rooms below it (eslint.config.mjs, ABOVE): no arrow up, no circle between rooms.`,
  },
];

// Schema modules a run would build in its own module instances and keep while cached (BENCHMARKS.md, figure (h)):
// workflow and machine code import their types as types and their plain helpers from the modules named here.
const SCHEMA_MODULES = {
  group: ['**/common/chat', '**/common/agents', '**/common/view'],
  allowTypeImports: true,
  message: 'A run would build these schemas and keep them while cached: import types as types, helpers from common/chat-helpers or common/apply-agent (figure (h)).',
};
const MACHINE_PATTERNS = [
  { group: ['node:*', 'fs', 'path', 'os', 'crypto', 'child_process', 'http', 'net'], message: 'Node built-ins are not allowed in the pure machine.' },
  { group: ['@temporalio/*'], message: 'The pure machine imports nothing from the Temporal SDK: src/workflows interprets it.' },
];

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.temporal/', 'workspace/', 'coverage/', 'dist/', 'bench/peers/', 'bench/brokers/', 'bench/.scratch/', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    plugins: { 'import-x': importX },
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no activity or worker code.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'path', 'os', 'crypto', 'child_process', 'http', 'net'], message: 'Node built-ins are not allowed in workflow code.' },
            { group: ['../activities', '../activities/*', '@temporalio/worker', '@temporalio/activity', 'openai'], allowTypeImports: true, message: 'Workflow code may import activities and worker code only as types.' },
            SCHEMA_MODULES,
            ...above('workflows'),
          ],
        },
      ],
      // The vocabulary lives on the ground floor (src/common): workflow code names states, critique actions and
      // failure types by their constants, never as string literals.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "Literal[value=/^(IDLE|PLANNING|STREAMING|PROCESSING|TOOL_EXECUTING|AWAITING_APPROVAL|CRITIQUE|COMPACTING|PAUSED|COMPLETED|FAILED|ABORTED|retry|replan|complete|InvalidInput|AgentRunFailed|UnknownTool|UnknownAgent|ConversationUnavailable|CompactionImpossible|CritiqueUnparsable|ModelInvocationError[.].*)$/]",
          message: 'Use the constant from src/common (AgentState, CritiqueAction, FailureType, ModelErrorType).',
        },
        {
          // The bundler may rename a function it concatenates (agentRun became agent_run_agentRun): a child's type
          // is named by its string, never taken from a function.
          selector: "CallExpression[callee.name=/^(executeChild|startChild)$/] > Identifier.arguments:first-child[name!=/^[A-Z][A-Z0-9_]*$/]",
          message: 'Start a child workflow by its type name (WORKFLOW_TYPE), with the function as a type argument: a bundled function may be renamed.',
        },
      ],
    },
  },
  ...Object.keys(ABOVE)
    .filter((room) => room !== 'workflows' && room !== 'machine')
    .map((room) => ({ files: [`src/${room}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns: above(room) }] } })),
  {
    // The pure machine runs inside the workflow sandbox and in every process that reads a snapshot: no Temporal SDK, no
    // Node built-in, no clock or randomness of its own; it imports src/common alone (ABOVE, machine).
    files: ['src/machine/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [...MACHINE_PATTERNS, SCHEMA_MODULES, ...above('machine')],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "Literal[value=/^(IDLE|PLANNING|STREAMING|PROCESSING|TOOL_EXECUTING|AWAITING_APPROVAL|CRITIQUE|COMPACTING|PAUSED|COMPLETED|FAILED|ABORTED|retry|replan|complete|InvalidInput|AgentRunFailed|UnknownTool|UnknownAgent|ConversationUnavailable|CompactionImpossible|CritiqueUnparsable|ModelInvocationError[.].*)$/]",
          message: 'Use the constant from src/common (AgentState, CritiqueAction, FailureType, ModelErrorType).',
        },
        { selector: "MemberExpression[object.name='Date'][property.name='now'], NewExpression[callee.name='Date'][arguments.length=0], MemberExpression[object.name='Math'][property.name='random']", message: 'The machine is given the time (`now`); it reads no clock and no randomness.' },
      ],
    },
  },
  {
    // The snapshot's schemas: required only where a stored snapshot is read (machine/snapshot.ts), so they may be built of them.
    files: ['src/machine/snapshot-schema.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...MACHINE_PATTERNS, ...above('machine')] }] },
  },
  {
    // The bench's ground floor: lib/ serves the systems, the figures and the report, and imports none of them.
    files: ['bench/lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../systems', '../systems/*', '../figure-e', '../profiles', '../report', '../run'], message: 'bench/lib imports nothing above it.' }] }] },
  },
);
