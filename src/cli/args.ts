/** Parsers of the CLI's option values: each refuses what it cannot read with a message commander prints beside the flag. */
import { InvalidArgumentError } from 'commander';

export function integer(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected an integer');
  return Number(value);
}

/** A number as typed: `Number` would pass `NaN` on for the schema to call "received NaN". */
export function decimal(value: string): number {
  if (!/^-?(\d+\.?\d*|\.\d+)$/.test(value.trim())) throw new InvalidArgumentError('expected a number, e.g. 0.8');
  return Number(value);
}

/** A parser of a JSON object whose refusal shows `example`. */
export const jsonObjectLike =
  (example: string) =>
  (value: string): Record<string, unknown> =>
    parseJsonObject(value, example);

/** A JSON object (a tool's arguments, say). */
export const jsonObject = jsonObjectLike('{"path":"a.txt"}');

function parseJsonObject(value: string, example: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(`expected a JSON object, e.g. '${example}'`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON object');
  return parsed as Record<string, unknown>;
}
