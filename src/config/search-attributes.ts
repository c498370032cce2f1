/**
 * The search attributes agent runs upsert, and their registration. The server refuses a run's upsert of an
 * unregistered attribute by failing its workflow task, which retries forever: a worker checks at start instead
 * (`assertSearchAttributes`), and `agent setup-cluster` registers them on a self-hosted cluster. Temporal Cloud
 * refuses registration through the API: there they are added with `tcld` or the Cloud UI (docs/deployment.md).
 */
import type { temporal } from '@temporalio/proto';
import { AGENT_STATE_SEARCH_ATTRIBUTE, AGENT_TENANT_SEARCH_ATTRIBUTE } from '../common/constants';

type OperatorService = temporal.api.operatorservice.v1.OperatorService;

/** The attributes and their types, as the `temporal` CLI and `tcld` name the types. */
export const REQUIRED_SEARCH_ATTRIBUTES = { [AGENT_STATE_SEARCH_ATTRIBUTE]: 'Keyword', [AGENT_TENANT_SEARCH_ATTRIBUTE]: 'Keyword' } as const;

// Wire values of temporal.api.enums.v1.IndexedValueType (the enum is not re-exported by the SDK).
const INDEXED_VALUE_TYPE: Record<string, number> = { Text: 1, Keyword: 2, Int: 3, Double: 4, Bool: 5, Datetime: 6, KeywordList: 7 };
const typeName = (wire: number | undefined) => Object.entries(INDEXED_VALUE_TYPE).find(([, v]) => v === wire)?.[0];

export interface SearchAttributeProblem {
  name: string;
  type: string;
  /** The type it is registered with, when it exists with another. */
  registeredAs?: string;
}

/** The required attributes that `namespace` lacks or has with another type. */
export async function searchAttributeProblems(operator: OperatorService, namespace: string): Promise<SearchAttributeProblem[]> {
  const { customAttributes } = await operator.listSearchAttributes({ namespace });
  return Object.entries(REQUIRED_SEARCH_ATTRIBUTES)
    .filter(([name, type]) => customAttributes?.[name] !== INDEXED_VALUE_TYPE[type])
    .map(([name, type]) => {
      const registered = customAttributes?.[name];
      return { name, type, ...(registered != null ? { registeredAs: typeName(registered) ?? String(registered) } : {}) };
    });
}

/** The commands that add `missing` on `namespace`: self-hosted, and on Temporal Cloud. */
export function howToAdd(missing: SearchAttributeProblem[], namespace: string): string {
  const tcld = missing.map((a) => `tcld namespace search-attributes add --namespace ${namespace}.<account-id> --search-attribute "${a.name}=${a.type}"`);
  return `self-hosted: agent setup-cluster (TEMPORAL_NAMESPACE=${namespace}); Temporal Cloud: ${tcld.join('; ')} (or Namespaces > ${namespace} > Search attributes in the Cloud UI)`;
}

export class MissingSearchAttributesError extends Error {
  constructor(
    readonly namespace: string,
    readonly missing: SearchAttributeProblem[],
  ) {
    const list = missing.map((a) => (a.registeredAs ? `${a.name} (registered as ${a.registeredAs}, needs ${a.type})` : `${a.name} (${a.type})`)).join(', ');
    super(`namespace ${namespace} lacks the search attributes agent runs need: ${list}. Add them: ${howToAdd(missing, namespace)}`);
    this.name = 'MissingSearchAttributesError';
  }
}

/**
 * Fails with `MissingSearchAttributesError` when `namespace` lacks a required attribute. Returns false, having checked
 * nothing, when the server does not let this caller list them (an API key without the permission).
 */
export async function assertSearchAttributes(operator: OperatorService, namespace: string): Promise<boolean> {
  let problems: SearchAttributeProblem[];
  try {
    problems = await searchAttributeProblems(operator, namespace);
  } catch (err) {
    if (isRefusal(err)) return false;
    throw err;
  }
  if (problems.length) throw new MissingSearchAttributesError(namespace, problems);
  return true;
}

/** The server would not let this caller do it (gRPC PERMISSION_DENIED or UNIMPLEMENTED, as Temporal Cloud answers). */
const isRefusal = (err: unknown): boolean => {
  const code = (err as { code?: unknown }).code;
  return code === 7 || code === 12 || /PERMISSION_DENIED|UNIMPLEMENTED|not authorized/i.test(String(err));
};

export interface SetupResult {
  namespace: string;
  /** Registered by this call. */
  added: string[];
  /** Already there with the right type. */
  present: string[];
}

/**
 * Registers the required attributes that `namespace` lacks and waits until the server lists them (a self-hosted
 * cluster or the dev server). Idempotent. An attribute registered with another type is an error: it cannot be changed.
 */
export async function registerSearchAttributes(operator: OperatorService, namespace: string, opts: { deadline?: number } = {}): Promise<SetupResult> {
  const deadline = opts.deadline ?? Date.now() + 30_000;
  const problems = await searchAttributeProblems(operator, namespace);
  const clash = problems.filter((p) => p.registeredAs);
  if (clash.length) throw new MissingSearchAttributesError(namespace, clash);
  const present = Object.keys(REQUIRED_SEARCH_ATTRIBUTES).filter((name) => !problems.some((p) => p.name === name));
  if (problems.length === 0) return { namespace, added: [], present };
  try {
    await operator.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(problems.map((p) => [p.name, INDEXED_VALUE_TYPE[p.type]])) });
  } catch (err) {
    if (isRefusal(err)) throw new Error(`the server refused to register ${problems.map((p) => p.name).join(', ')} on namespace ${namespace} (${String(err)}); ${howToAdd(problems, namespace)}`, { cause: err });
    // A concurrent caller may have added it first; a clash of types is a real error.
    if (!/already exists/i.test(String(err)) || /different type/i.test(String(err))) throw err;
  }
  while ((await searchAttributeProblems(operator, namespace)).length > 0) {
    if (Date.now() > deadline) throw new Error(`search attributes ${problems.map((p) => p.name).join(', ')} were added to namespace ${namespace} but are still not listed`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { namespace, added: problems.map((p) => p.name), present };
}
