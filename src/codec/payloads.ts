/**
 * Payloads read outside a worker (a raw history, a raw description, a chain node), decoded with the SDK's public
 * pieces: the codecs' `decode` (last to first), then the payload converter (`arrayFromPayloads`, `mapFromPayloads`,
 * `fromPayloadsAtIndex`) or the failure converter (`failureToError`). The SDK's `describe()` and `fetchHistory()` leave
 * these payloads as they are on the wire.
 */
import {
  arrayFromPayloads,
  fromPayloadsAtIndex,
  mapFromPayloads,
  type LoadedDataConverter,
  type Payload,
  type PayloadCodec,
  type ProtoFailure,
} from '@temporalio/common';

/** Codecs encode first to last; so they decode last to first. */
export async function decodePayloads(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  for (let i = codecs.length - 1; i >= 0; i--) payloads = await codecs[i].decode(payloads);
  return payloads;
}

export async function encodePayloads(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  for (const codec of codecs) payloads = await codec.encode(payloads);
  return payloads;
}

/** The values of `payloads` (none: an empty array). */
export async function decodeArray(converter: LoadedDataConverter, payloads: Payload[] | null | undefined): Promise<unknown[]> {
  return arrayFromPayloads(converter.payloadConverter, payloads ? await decodePayloads(converter.payloadCodecs, payloads) : payloads);
}

/** The value at `index` of `payloads`. */
export async function decodeAt<T>(converter: LoadedDataConverter, index: number, payloads: Payload[]): Promise<T> {
  return fromPayloadsAtIndex<T>(converter.payloadConverter, index, await decodePayloads(converter.payloadCodecs, payloads));
}

/** A memo's (or a header's) values by key. */
export async function decodeMap(converter: LoadedDataConverter, map: Record<string, Payload> | null | undefined): Promise<Record<string, unknown> | undefined> {
  if (!map) return undefined;
  const keys = Object.keys(map);
  const decoded = await decodePayloads(converter.payloadCodecs, keys.map((k) => map[k]));
  return mapFromPayloads(converter.payloadConverter, Object.fromEntries(keys.map((k, i) => [k, decoded[i]])));
}

/** `value` as one payload, encoded by the codecs. */
export async function encodeOne(converter: LoadedDataConverter, value: unknown): Promise<Payload> {
  const [payload] = await encodePayloads(converter.payloadCodecs, [converter.payloadConverter.toPayload(value)]);
  return payload;
}

/** The error a failure stands for, its encoded attributes (message and stack under an encrypting failure converter) and details decoded first. */
export async function decodeFailureToError(converter: LoadedDataConverter, failure: ProtoFailure | null | undefined): Promise<Error | undefined> {
  return failure ? converter.failureConverter.failureToError(await decodeFailure(converter.payloadCodecs, failure), converter.payloadConverter) : undefined;
}

/** `failure` with every payload in it decoded, its causes too: what the codecs encoded in `encodeFailure` of the SDK. */
async function decodeFailure(codecs: readonly PayloadCodec[], failure: ProtoFailure): Promise<ProtoFailure> {
  const payloads = async (p: { payloads?: Payload[] | null } | null | undefined) => (p ? { payloads: await decodePayloads(codecs, p.payloads ?? []) } : undefined);
  const { applicationFailureInfo: app, timeoutFailureInfo: timeout, canceledFailureInfo: canceled, resetWorkflowFailureInfo: reset } = failure;
  return {
    ...failure,
    encodedAttributes: failure.encodedAttributes ? (await decodePayloads(codecs, [failure.encodedAttributes]))[0] : undefined,
    cause: failure.cause ? await decodeFailure(codecs, failure.cause) : null,
    applicationFailureInfo: app ? { ...app, details: await payloads(app.details) } : undefined,
    timeoutFailureInfo: timeout ? { ...timeout, lastHeartbeatDetails: await payloads(timeout.lastHeartbeatDetails) } : undefined,
    canceledFailureInfo: canceled ? { ...canceled, details: await payloads(canceled.details) } : undefined,
    resetWorkflowFailureInfo: reset ? { ...reset, lastHeartbeatDetails: await payloads(reset.lastHeartbeatDetails) } : undefined,
  };
}
