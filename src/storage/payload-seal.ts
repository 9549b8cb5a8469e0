// One value as stored bytes: a Temporal payload passed through the history's payload codecs (AES-256-GCM under
// CODEC_KEY when the history is encrypted), serialized. The session archive and the blob store both store this way.
import { defaultPayloadConverter, type DataConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export async function encodeValue(dataConverter: DataConverter, value: unknown): Promise<Uint8Array> {
  let payloads: Payload[] = [defaultPayloadConverter.toPayload(value)];
  for (const codec of dataConverter.payloadCodecs ?? []) payloads = await codec.encode(payloads);
  return temporal.api.common.v1.Payload.encode(payloads[0]).finish();
}

export async function decodeValue(dataConverter: DataConverter, bytes: Uint8Array): Promise<unknown> {
  let payloads: Payload[] = [temporal.api.common.v1.Payload.decode(bytes) as Payload];
  for (const codec of [...(dataConverter.payloadCodecs ?? [])].reverse()) payloads = await codec.decode(payloads);
  return defaultPayloadConverter.fromPayload(payloads[0]);
}
