/**
 * Property-based fuzzing of every input the outside world can send: the `agentRun` input and the `approve`,
 * `sendMessage` and `abort` payloads. Each invalid value is built from a valid one by one known mutation, so the
 * field path the error must name comes from how the value was built, never from the error itself. Pure: no server.
 */
import { Client, Connection } from '@temporalio/client';
import fc from 'fast-check';
import { AgentClient, InvalidAgentInputError } from '../src/client';
import {
  AbortInputSchema,
  ApproveInputSchema,
  parseAgentRunInput,
  parseWith,
  SendMessageInputSchema,
  type ParseResult,
} from '../src/common/input';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const RUNS = { numRuns: 200 };

/** An invalid value, the path of the field that makes it invalid, and a text the error must also contain, if any. */
interface Bad {
  value: unknown;
  path: Array<string | number>;
  mentions?: string;
}

/** One way to spoil an object: a label for the test name and the spoilt values it generates. */
type FaultSite = [label: string, arbitrary: fc.Arbitrary<Bad>];

interface FieldSpec {
  valid: fc.Arbitrary<unknown>;
  /** Values that are wrong for this field, with the path below the field (empty for the field itself). */
  invalid: fc.Arbitrary<Bad>;
  /** For a nested object or record: its fault sites, each tested on its own. */
  sites?: FaultSite[];
  required?: boolean;
}
type ObjectSpec = Record<string, FieldSpec>;

interface ObjectOptions {
  /** A whole-object rule beyond the fields (zod `refine`); valid objects satisfy it. */
  refine?: (v: Record<string, unknown>) => boolean;
  /** More fault sites, e.g. one that breaks the whole-object rule. */
  extraSites?: FaultSite[];
  /** Unknown keys are allowed and kept (zod `looseObject`). */
  loose?: boolean;
}

const here = (arb: fc.Arbitrary<unknown>): fc.Arbitrary<Bad> => arb.map((value) => ({ value, path: [] }));

/** Anything at all, exotic values included; never `undefined`, which an optional field accepts. */
const junk = fc
  .anything({ withBoxedValues: true, withMap: true, withSet: true, withDate: true, withTypedArray: true, withBigInt: true, withNullPrototype: true, withSparseArray: true })
  .filter((v) => v !== undefined);
/** A string larger than a field allows, built cheaply. */
const hugeString = (min: number) => fc.tuple(fc.integer({ min, max: min + 50_000 }), fc.constantFrom('x', 'é', '字', '😀')).map(([n, c]) => c.repeat(n));
/** Every character JavaScript's `trim` removes. */
const WHITESPACE = [' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
const blank = fc.string({ unit: fc.constantFrom(...WHITESPACE), maxLength: 20 });
const meaningful = fc.oneof(
  fc.string({ minLength: 1 }).filter((s) => s.trim().length > 0),
  fc.tuple(blank, fc.string({ minLength: 1, unit: 'grapheme' }).filter((s) => s.trim().length > 0), blank).map((p) => p.join('')),
);

const notString = junk.filter((v) => typeof v !== 'string');
const notBoolean = fc.oneof(junk.filter((v) => typeof v !== 'boolean'), fc.constantFrom('true', 'false', 0, 1));
const notNumber = fc.oneof(junk.filter((v) => typeof v !== 'number'), fc.integer().map(String), fc.bigInt({ min: 1n, max: 1_000n }));
const notFinite = fc.constantFrom(NaN, Infinity, -Infinity);

const anyString: FieldSpec = { valid: fc.string(), invalid: here(notString) };
const nonEmptyString: FieldSpec = { valid: fc.string({ minLength: 1 }), invalid: here(fc.oneof(fc.constant(''), notString)) };
const boolean: FieldSpec = { valid: fc.boolean(), invalid: here(notBoolean) };

function boundedString(max: number): FieldSpec {
  return { valid: fc.string({ maxLength: 200 }), invalid: here(fc.oneof(fc.constant('x'.repeat(max + 1)), hugeString(max + 1), notString)) };
}

/** An integer in [min, max]; zod's `int()` also stops at the largest safe integer. */
function int(min: number, max = Number.MAX_SAFE_INTEGER): FieldSpec {
  return {
    valid: fc.integer({ min, max }),
    invalid: here(
      fc.oneof(
        fc.constantFrom(min - 1, max + 1, min - 0.5, 1e300, -1e300),
        notFinite,
        fc.integer({ min: Number.MIN_SAFE_INTEGER, max: min - 1 }),
        ...(max < Number.MAX_SAFE_INTEGER ? [fc.integer({ min: max + 1, max: Number.MAX_SAFE_INTEGER })] : []),
        fc.double({ min, max: Math.min(max, 1e15), noNaN: true }).filter((d) => !Number.isInteger(d)),
        notNumber,
      ),
    ),
  };
}

/** A finite number from `min` to `max`, both allowed. */
/** A field that also takes `null` (a wait with no deadline): null is valid, and never generated as a fault. */
function orNull(spec: FieldSpec): FieldSpec {
  return { valid: fc.oneof(spec.valid, fc.constant(null)), invalid: spec.invalid.filter((bad) => bad.value !== null || bad.path.length > 0) };
}

function between(min: number, max: number): FieldSpec {
  return {
    valid: fc.double({ min, max, noNaN: true }),
    invalid: here(fc.oneof(fc.double({ min: -1e9, max: 1e9, noNaN: true }).filter((d) => d < min || d > max), fc.constantFrom(min - 0.01, max + 0.01), notFinite, notNumber)),
  };
}

/** A finite number from `min` up, `min` itself allowed or not. */
function number(min: number, inclusive: boolean): FieldSpec {
  return {
    valid: fc.double({ min, max: 1e9, noNaN: true, minExcluded: !inclusive }),
    invalid: here(
      fc.oneof(
        // JavaScript comparison, not fast-check's order: that puts -0 below 0, zod (rightly) does not.
        fc.double({ min: -1e9, max: min, noNaN: true }).filter((d) => (inclusive ? d < min : d <= min)),
        fc.constantFrom(min - 1, -Number.MIN_VALUE, ...(inclusive ? [] : [min, -0])),
        notFinite,
        notNumber,
      ),
    ),
  };
}

function oneOf(values: string[]): FieldSpec {
  return {
    valid: fc.constantFrom(...values),
    invalid: here(
      fc.oneof(
        fc.constantFrom('', ...values.flatMap((v) => [v.toUpperCase(), ` ${v}`, `${v} `])),
        fc.string().filter((s) => !values.includes(s)),
        hugeString(10),
        notString,
      ),
    ),
  };
}

function stringArray(minLength: number): FieldSpec {
  const element = nonEmptyString;
  return {
    valid: fc.array(element.valid, { minLength, maxLength: 5 }),
    invalid: fc.oneof(
      here(junk.filter((v) => !Array.isArray(v))),
      ...(minLength > 0 ? [here(fc.constant([]))] : []),
      fc
        .tuple(fc.array(element.valid, { maxLength: 3 }), element.invalid, fc.array(element.valid, { maxLength: 3 }))
        .map(([before, bad, after]) => ({ value: [...before, bad.value, ...after], path: [before.length, ...bad.path] })),
    ),
  };
}

const requiredKeys = (spec: ObjectSpec) => Object.keys(spec).filter((k) => spec[k].required);
/** Keys a zod record or object can hold as data (zod drops `__proto__`: see the known issue at the end). */
const dataKey = (spec: ObjectSpec = {}) => fc.string().filter((k) => k !== '__proto__' && !Object.hasOwn(spec, k));

function validObject(spec: ObjectSpec, opts: ObjectOptions = {}): fc.Arbitrary<Record<string, unknown>> {
  const fields = Object.fromEntries(Object.entries(spec).map(([k, f]) => [k, f.valid]));
  let arb = fc.record(fields, { requiredKeys: requiredKeys(spec) });
  if (opts.loose) {
    arb = fc.tuple(arb, fc.dictionary(dataKey(spec), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })).map(([known, extra]) => ({ ...extra, ...known }));
  }
  return opts.refine ? arb.filter(opts.refine) : arb;
}

/** Keys a strict schema must refuse, including the ones that look like prototype properties or known fields. */
const unknownKey = (spec: ObjectSpec) =>
  fc
    .oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', ...Object.keys(spec).flatMap((k) => [k.toUpperCase(), ` ${k}`, `${k}.x`])))
    .filter((k) => !Object.hasOwn(spec, k));

/** Every single fault an object can have: not an object at all, an unknown key, a missing required field, one bad field. */
function faultSites(spec: ObjectSpec, notAnObject: fc.Arbitrary<unknown>, opts: ObjectOptions = {}): FaultSite[] {
  const base = validObject(spec, opts);
  const inField = (key: string, arb: fc.Arbitrary<Bad>) =>
    fc.tuple(base, arb).map(([valid, bad]): Bad => ({ ...bad, value: { ...valid, [key]: bad.value }, path: [key, ...bad.path] }));
  return [
    ['(not an object)', here(notAnObject)],
    ...(opts.loose
      ? []
      : [
          [
            '(unknown key)',
            fc.tuple(base, unknownKey(spec), junk).map(([valid, key, value]): Bad => ({ value: { ...valid, [key]: value }, path: [], mentions: `"${key}"` })),
          ] as FaultSite,
        ]),
    ...requiredKeys(spec).map((key): FaultSite => [
      `${key} (missing)`,
      base.map((valid) => {
        const { [key]: _removed, ...rest } = valid;
        return { value: rest, path: [key] };
      }),
    ]),
    ...(opts.extraSites ?? []),
    ...Object.entries(spec).flatMap(([key, field]): FaultSite[] =>
      field.sites
        ? field.sites.map(([label, arb]): FaultSite => [label.startsWith('(') ? `${key} ${label}` : `${key}.${label}`, inField(key, arb)])
        : [[key, inField(key, field.invalid)]],
    ),
  ];
}

const anyOf = (sites: FaultSite[]) => fc.oneof(...sites.map(([, arb]) => arb));
const notAnObject = junk.filter((v) => v === null || typeof v !== 'object' || Array.isArray(v));

function nestedObject(spec: ObjectSpec, opts: ObjectOptions = {}): FieldSpec {
  const sites = faultSites(spec, notAnObject, opts);
  return { valid: validObject(spec, opts), invalid: anyOf(sites), sites };
}

/** A record with non-empty string keys. */
function record(value: FieldSpec): FieldSpec {
  const valid = fc.dictionary(dataKey().filter((k) => k !== ''), value.valid, { maxKeys: 3 });
  const sites: FaultSite[] = [
    ['(not an object)', here(notAnObject)],
    ['(empty key)', fc.tuple(valid, value.valid).map(([entries, v]): Bad => ({ value: { ...entries, '': v }, path: [''], mentions: 'Invalid key' }))],
    ...(value.sites ?? [['', value.invalid] as FaultSite]).map(([label, arb]): FaultSite => [
      `<key>${label.startsWith('(') ? ` ${label}` : label ? `.${label}` : ''}`,
      fc.tuple(valid, dataKey().filter((k) => k !== ''), arb).map(([entries, key, bad]): Bad => ({ ...bad, value: { ...entries, [key]: bad.value }, path: [key, ...bad.path] })),
    ]),
  ];
  return { valid, invalid: anyOf(sites), sites };
}

const LIMITS = {
  maxLoops: int(1, 10_000),
  maxToolCalls: int(1, 100_000),
  timeoutMs: int(1_000, 30 * 24 * 3600_000),
  approvalTimeoutMs: orNull(int(1_000, 365 * 24 * 3600_000)),
  maxRepeats: int(2, 100),
  historyEvents: int(100, 50_000),
  wrapUpAt: between(0.1, 1),
  maxPausedMs: orNull(int(1_000, 365 * 24 * 3600_000)),
  totalTimeoutMs: int(1_000, 365 * 24 * 3600_000),
  onLimit: oneOf(['fail', 'complete']),
};
const DEFAULT_COMPACTION = { threshold: 0.8, keepRecentMessages: 6 };
const DEFAULT_LIMITS = { maxLoops: 50, maxToolCalls: 100, timeoutMs: 300_000, approvalTimeoutMs: 604_800_000, maxPausedMs: 604_800_000, maxRepeats: 3, historyEvents: 10_000, wrapUpAt: 0.8, onLimit: 'fail' };

const hasBudgetLimit = (b: Record<string, unknown>) => b.maxTokens !== undefined || b.maxCostUsd !== undefined;
const BUDGET: ObjectSpec = {
  maxTokens: int(1),
  maxCostUsd: number(0, false),
  reserveOutputTokens: int(0, 1_000_000),
  onExceed: oneOf(['fail', 'approve']),
  prices: record(nestedObject({ inputPerMTok: { ...number(0, true), required: true }, outputPerMTok: { ...number(0, true), required: true } })),
};
const budget = nestedObject(BUDGET, {
  refine: hasBudgetLimit,
  extraSites: [
    [
      '(neither maxTokens nor maxCostUsd)',
      validObject(BUDGET).map(({ maxTokens: _t, maxCostUsd: _c, ...rest }): Bad => ({ value: rest, path: [], mentions: 'set maxTokens, maxCostUsd or both' })),
    ],
  ],
});

const RESUME: ObjectSpec = {
  kind: { ...oneOf(['continue', 'fork']), required: true },
  snapshot: {
    ...nestedObject(
      {
        schemaVersion: { valid: fc.constant('1.0'), invalid: here(fc.oneof(fc.constantFrom(0, 1, 2, 3, '1', '3', '1.1', 1.5, true), junk.filter((v) => v !== '1.0'))), required: true },
        phase: { ...nestedObject({ type: { ...anyString, required: true } }, { loose: true }), required: true },
        counters: { ...nestedObject({ step: { ...int(0), required: true } }, { loose: true }), required: true },
      },
      { loose: true },
    ),
    required: true,
  },
  origin: nestedObject({ workflowId: { ...anyString, required: true }, step: { ...int(0), required: true } }),
};

const AGENT_RUN_INPUT: ObjectSpec = {
  prompt: {
    required: true,
    valid: fc.oneof({ weight: 5, arbitrary: meaningful }, { weight: 1, arbitrary: hugeString(100_000) }),
    invalid: here(fc.oneof(blank, notString)),
  },
  model: nonEmptyString,
  systemPrompt: nonEmptyString,
  limits: nestedObject(LIMITS),
  tools: stringArray(0),
  plan: boolean,
  critique: oneOf(['rules', 'model']),
  critiqueMinConfidence: between(0, 100),
  toolOrder: oneOf(['model', 'concurrent']),
  maxOutputTokens: int(1, 1_000_000),
  contextWindowTokens: int(256, 100_000_000),
  compaction: nestedObject({ threshold: between(0.1, 1), keepRecentMessages: int(1, 1_000) }),
  // `onTimeout: 'reject'` and `reminderAt` are valid only with limits.approvalTimeoutMs: machine.test.ts checks that rule.
  // A named approval tool must be among `tools` when they are given (cli.test.ts and gateway.test.ts check that rule).
  approval: nestedObject({ tools: { ...stringArray(1), valid: fc.constant(['*']), required: true }, onTimeout: oneOf(['fail']) }),
  budget,
  keepOpenMs: int(0, 30 * 24 * 3600_000),
  resume: nestedObject(RESUME),
};

/** `z.record(z.string(), z.unknown())`: any plain object, whatever its keys and values; anything else is refused. */
const anyRecord: FieldSpec = { valid: fc.dictionary(dataKey(), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }), invalid: here(notAnObject) };

const APPROVE_INPUT: ObjectSpec = {
  toolCallId: { ...nonEmptyString, required: true },
  approved: { ...boolean, required: true },
  feedback: boundedString(10_000),
  // Approve with edits: without it in the spec, an "unknown key" the fuzzer names `arguments` is a real field.
  arguments: anyRecord,
};

const SEND_MESSAGE_INPUT: ObjectSpec = {
  text: {
    required: true,
    valid: fc.oneof({ weight: 5, arbitrary: meaningful }, { weight: 1, arbitrary: blank.map((b) => `${b}${'m'.repeat(100_000)}${b}`) }),
    invalid: here(fc.oneof(blank, fc.constant('t'.repeat(100_001)), hugeString(100_001), notString)),
  },
};

const ABORT_INPUT: ObjectSpec = { reason: boundedString(1_000) };

/** Top-level inputs may also be `undefined`: no argument at all. */
const topLevelSites = (spec: ObjectSpec) => faultSites(spec, fc.oneof(notAnObject, fc.constant(undefined)));

/** Counterexamples print with long strings cut short. */
function previewed<T extends object>(arb: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return arb.map((v) => Object.defineProperty(v, fc.toStringMethod, { value: () => fc.stringify(shorten(v)), enumerable: false }));
}
function shorten(v: unknown): unknown {
  if (typeof v === 'string') return v.length > 80 ? `${v.slice(0, 20)}…(${v.length} chars)` : v;
  if (Array.isArray(v)) return v.map(shorten);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shorten(x)]));
  }
  return v;
}
const validInputs = (spec: ObjectSpec) => previewed(validObject(spec).map((input) => ({ input })));

const pathText = (path: Bad['path']) => (path.length ? path.join('.') : '(input)');

/** The refusal names the field the mutation spoilt, first and alone, and what else the fault calls for (an unknown key's name). */
function expectRefusal(result: ParseResult<unknown>, what: string, bad: Bad): void {
  const short = (s: string) => JSON.stringify(s.length > 300 ? `${s.slice(0, 300)}…` : s);
  if (result.ok) throw new Error(`accepted an invalid ${what} (fault at ${pathText(bad.path)}): ${short(JSON.stringify(result.value) ?? '')}`);
  const prefix = `Invalid ${what}: ${pathText(bad.path)}: `;
  if (!result.error.startsWith(prefix)) throw new Error(`expected the error to start with ${JSON.stringify(prefix)}, got ${short(result.error)}`);
  if (bad.mentions !== undefined && !result.error.includes(bad.mentions)) {
    throw new Error(`expected the error to mention ${JSON.stringify(bad.mentions)}, got ${short(result.error)}`);
  }
}

describe('agentRun input', () => {
  test('every valid input is accepted, with the documented defaults filled in and the prompt trimmed', () => {
    fc.assert(
      fc.property(validInputs(AGENT_RUN_INPUT), ({ input }) => {
        const parsed = parseAgentRunInput(input);
        if (!parsed.ok) throw new Error(parsed.error);
        const { prompt, limits, plan, critique, critiqueMinConfidence, compaction, budget, keepOpenMs, fallbackModels, returnMessages, toolOrder, ...rest } = input as Record<string, any>;
        expect(parsed.value).toEqual({
          ...rest,
          prompt: prompt.trim(),
          limits: { ...DEFAULT_LIMITS, ...limits },
          plan: plan ?? false,
          critique: critique ?? 'rules',
          critiqueMinConfidence: critiqueMinConfidence ?? 50,
          toolOrder: toolOrder ?? 'model',
          compaction: { ...DEFAULT_COMPACTION, ...compaction },
          keepOpenMs: keepOpenMs ?? 0,
          fallbackModels: fallbackModels ?? [],
          returnMessages: returnMessages ?? false,
          ...(budget ? { budget: { reserveOutputTokens: 1024, onExceed: 'fail', ...budget } } : {}),
        });
      }),
      { numRuns: 500 },
    );
  });

  test('the bare minimum gets every default', () => {
    expect(parseAgentRunInput({ prompt: 'hi' })).toEqual({
      ok: true,
      value: { prompt: 'hi', limits: DEFAULT_LIMITS, plan: false, toolOrder: 'model', critique: 'rules', critiqueMinConfidence: 50, compaction: DEFAULT_COMPACTION, keepOpenMs: 0, fallbackModels: [], returnMessages: false },
    });
  });

  test.each(topLevelSites(AGENT_RUN_INPUT))('a fault at %s is refused, naming the field', (_label, arbitrary) => {
    fc.assert(
      fc.property(previewed(arbitrary), (bad) => expectRefusal(parseAgentRunInput(bad.value), 'agentRun input', bad)),
      RUNS,
    );
  });

  test('examples of each kind of fault name the field path', () => {
    const cases: Array<[unknown, string]> = [
      [{ prompt: 3 }, 'prompt'],
      [{ prompt: ' \n\t\u00a0' }, 'prompt'],
      [{}, 'prompt'],
      [{ prompt: 'x', limits: { maxLoops: 0 } }, 'limits.maxLoops'],
      [{ prompt: 'x', limits: { maxLoops: 10_001 } }, 'limits.maxLoops'],
      [{ prompt: 'x', limits: { timeoutMs: 999 } }, 'limits.timeoutMs'],
      [{ prompt: 'x', limits: { maxRepeats: 2.5 } }, 'limits.maxRepeats'],
      [{ prompt: 'x', limits: { maxToolCalls: '10' } }, 'limits.maxToolCalls'],
      [{ prompt: 'x', limits: { maxloops: 5 } }, 'limits'],
      [{ prompt: 'x', critique: 'llm' }, 'critique'],
      [{ prompt: 'x', approval: { tools: [] } }, 'approval.tools'],
      [{ prompt: 'x', approval: { tools: ['writeFile', ''] } }, 'approval.tools.1'],
      [{ prompt: 'x', approval: 'writeFile' }, 'approval'],
      [{ prompt: 'x', tools: 'readFile' }, 'tools'],
      [{ prompt: 'x', budget: {} }, 'budget'],
      [{ prompt: 'x', budget: { maxTokens: 0 } }, 'budget.maxTokens'],
      [{ prompt: 'x', budget: { maxCostUsd: 1, prices: { 'gpt-4o': { inputPerMTok: -1, outputPerMTok: 1 } } } }, 'budget.prices.gpt-4o.inputPerMTok'],
      [{ prompt: 'x', keepOpenMs: -1 }, 'keepOpenMs'],
      [{ prompt: 'x', resume: { kind: 'fork', snapshot: { schemaVersion: 3, phase: { type: 'IDLE' }, counters: { step: 0 } } } }, 'resume.snapshot.schemaVersion'],
      [{ prompt: 'x', temperature: 0 }, '(input)'],
      [null, '(input)'],
      [[{ prompt: 'x' }], '(input)'],
    ];
    for (const [value, path] of cases) {
      const parsed = parseAgentRunInput(value);
      expect(parsed.ok ? 'accepted' : parsed.error).toMatch(new RegExp(`^Invalid agentRun input: ${path.replace(/[.()]/g, '\\$&')}: `));
    }
  });
});

describe.each([
  ['approve input', ApproveInputSchema, APPROVE_INPUT, (v: any) => v],
  ['sendMessage input', SendMessageInputSchema, SEND_MESSAGE_INPUT, (v: any) => ({ text: v.text.trim() })],
  ['abort input', AbortInputSchema, ABORT_INPUT, (v: any) => v],
] as const)('%s', (what, schema, spec, resolved) => {
  test('every valid payload is accepted as sent (text trimmed)', () => {
    fc.assert(
      fc.property(validInputs(spec), ({ input }) => {
        const parsed = parseWith(schema, input, what);
        if (!parsed.ok) throw new Error(parsed.error);
        expect(parsed.value).toEqual(resolved(input));
      }),
      RUNS,
    );
  });

  test.each(topLevelSites(spec))('a fault at %s is refused, naming the field', (_label, arbitrary) => {
    fc.assert(
      fc.property(previewed(arbitrary), (bad) => expectRefusal(parseWith(schema, bad.value, what), what, bad)),
      RUNS,
    );
  });
});

describe('AgentClient.start', () => {
  // A lazy connection to a port nothing listens on: a call that reached the network would fail, not hang.
  const connection = Connection.lazy({ address: '127.0.0.1:1', plugins: [closeSafeConnectionPlugin] });
  const client = new Client({ connection });
  const agents = new AgentClient(client, 'nowhere');
  afterAll(() => connection.close());

  test('refuses every invalid input with InvalidAgentInputError, naming the field, and starts nothing', async () => {
    const start = jest.spyOn(client.workflow, 'start').mockRejectedValue(new Error('the client contacted the server'));
    try {
      await fc.assert(
        fc.asyncProperty(previewed(anyOf(topLevelSites(AGENT_RUN_INPUT))), async (bad) => {
          const err = await agents.start(bad.value as never).then(
            () => undefined,
            (e: unknown) => e,
          );
          if (!(err instanceof InvalidAgentInputError)) throw new Error(`expected InvalidAgentInputError, got ${String(err)}`);
          expectRefusal({ ok: false, error: err.message }, 'agentRun input', bad);
        }),
        { numRuns: 300 },
      );
      expect(start).not.toHaveBeenCalled();
    } finally {
      start.mockRestore();
    }
  });

  test('passes a valid input through to the server as given (the control for the test above)', async () => {
    const start = jest
      .spyOn(client.workflow, 'start')
      .mockImplementation(async (_type, opts) => ({ workflowId: opts.workflowId, firstExecutionRunId: 'run-1' }) as never);
    try {
      await fc.assert(
        fc.asyncProperty(validInputs(AGENT_RUN_INPUT), async ({ input }) => {
          start.mockClear();
          const handle = await agents.start(input as never);
          expect(handle.runId).toBe('run-1');
          expect(start).toHaveBeenCalledTimes(1);
          expect(start.mock.calls[0][1]).toMatchObject({ taskQueue: 'nowhere', args: [input] });
        }),
        { numRuns: 50 },
      );
    } finally {
      start.mockRestore();
    }
  });
});

/**
 * Known issue, found by this file: zod's `record` skips an own `__proto__` key instead of checking it, so a price
 * table entry `"__proto__": 3` (JSON.parse makes it an own key, as on the wire) is accepted and silently dropped.
 * Harmless today, but it is the one invalid input this file found accepted. Marked `failing` until refused.
 */
test.failing('a price entry named __proto__ with a bad value is refused', () => {
  const input: unknown = JSON.parse('{"prompt":"x","budget":{"maxTokens":5,"prices":{"__proto__":3}}}');
  expectRefusal(parseAgentRunInput(input), 'agentRun input', { value: input, path: ['budget', 'prices', '__proto__'] });
});
