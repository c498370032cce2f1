/** Checks a state view against the gateway's OpenAPI document (its `RunState` schema), as a client generated from it would. */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../src/gateway/openapi';

let validate: ValidateFunction | undefined;

/** Each way `view` breaks the documented `RunState` (the field's path, then what is wrong); empty when it matches. */
export function undocumented(view: unknown): string[] {
  if (!validate) {
    // `strict: false`: the document's descriptions and OpenAPI wrapper are not JSON Schema keywords ajv knows.
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const { components } = openApiDocument() as { components: unknown };
    ajv.addSchema({ $id: 'https://gateway.invalid/openapi.json', components });
    validate = ajv.compile({ $ref: 'https://gateway.invalid/openapi.json#/components/schemas/RunState' });
  }
  return validate(view) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '(view)'} ${e.message}${e.params && 'additionalProperty' in e.params ? `: ${e.params.additionalProperty}` : ''}`);
}
