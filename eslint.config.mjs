// Lint what matters: unawaited promises, type-only imports, workflow sandbox safety, import cycles.
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

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
      ],
    },
  },
  {
    // Nothing on the ground floor reaches up into the workflow or activity code.
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../workflows', '../workflows/*', '../activities', '../activities/*'], message: 'src/common imports nothing from workflows/ or activities/.' }] }],
    },
  },
);
