/**
 * The payload and timestamp helpers that read the server's raw messages (src/codec/payloads.ts,
 * src/common/proto-time.ts), built on the SDK's public API: through the product's real codecs, an encrypting failure
 * converter included.
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, DefaultFailureConverter, defaultDataConverter, type LoadedDataConverter, type ProtoFailure } from '@temporalio/common';
import { google } from '@temporalio/proto';
import { EncryptionCodec } from '../src/codec';
import { decodeArray, decodeAt, decodeFailureToError, decodeMap, encodeOne } from '../src/codec/payloads';
import { msToDuration, tsToDate } from '../src/common/proto-time';

const codec = new EncryptionCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });
const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
const converter: LoadedDataConverter = { ...defaultDataConverter, failureConverter, payloadCodecs: [codec] };

test('values encoded by the codecs decode back, as an array, at an index and as a map; none is an empty array', async () => {
  const a = await encodeOne(converter, { prompt: 'the secret plan' });
  const b = await encodeOne(converter, 42);
  expect(Buffer.from(a.data!).toString()).not.toContain('secret');
  expect(await decodeArray(converter, [a, b])).toEqual([{ prompt: 'the secret plan' }, 42]);
  expect(await decodeAt(converter, 1, [a, b])).toBe(42);
  expect(await decodeMap(converter, { run: a, n: b })).toEqual({ run: { prompt: 'the secret plan' }, n: 42 });
  expect(await decodeMap(converter, undefined)).toBeUndefined();
  expect(await decodeArray(converter, undefined)).toEqual([]);
});

test('a failure whose message and stack the codecs encrypted decodes to its error, its cause and details too', async () => {
  const error = ApplicationFailure.create({ message: 'the tool quoted the secret', type: 'ToolFailed', details: ['detail'], cause: new Error('the cause') });
  const encrypt = async (f: ProtoFailure): Promise<ProtoFailure> => ({
    ...f,
    encodedAttributes: f.encodedAttributes ? (await codec.encode([f.encodedAttributes]))[0] : undefined,
    cause: f.cause ? await encrypt(f.cause) : undefined,
    applicationFailureInfo: f.applicationFailureInfo
      ? { ...f.applicationFailureInfo, details: { payloads: await codec.encode(f.applicationFailureInfo.details?.payloads ?? []) } }
      : undefined,
  });
  const failure = await encrypt(failureConverter.errorToFailure(error, converter.payloadConverter));
  expect(failure.message).not.toContain('secret');

  const decoded = await decodeFailureToError(converter, failure);
  expect(decoded).toBeInstanceOf(ApplicationFailure);
  expect(decoded!.message).toBe('the tool quoted the secret');
  expect((decoded as ApplicationFailure).type).toBe('ToolFailed');
  expect((decoded as ApplicationFailure).details).toEqual(['detail']);
  expect((decoded!.cause as Error).message).toBe('the cause');
  expect(await decodeFailureToError(converter, undefined)).toBeUndefined();
});

test('a proto timestamp, its seconds a Long as decoded or a number, is the Date it names; a duration of milliseconds round-trips', () => {
  const wire = google.protobuf.Timestamp.encode({ seconds: google.protobuf.Timestamp.fromObject({ seconds: 1_767_225_600 }).seconds, nanos: 123_456_789 }).finish();
  expect(tsToDate(google.protobuf.Timestamp.decode(wire))?.toISOString()).toBe('2026-01-01T00:00:00.123Z');
  expect(tsToDate({ seconds: 1, nanos: 0 })?.getTime()).toBe(1_000);
  expect(tsToDate({ nanos: 2_000_000 })?.getTime()).toBe(2);
  expect(tsToDate(null)).toBeUndefined();
  expect(tsToDate(undefined)).toBeUndefined();

  for (const ms of [1, 999, 1_000, 1_500, 86_400_123]) {
    const duration = google.protobuf.Duration.decode(google.protobuf.Duration.encode(msToDuration(ms)).finish());
    expect(Number(duration.seconds) * 1000 + duration.nanos / 1e6).toBe(ms);
  }
  expect(msToDuration(1)).toMatchObject({ nanos: 1_000_000 });
});
