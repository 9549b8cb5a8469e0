// AES-256-GCM PayloadCodec: each whole Payload (metadata included) is sealed under the current key, named by its id.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ApplicationFailure, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CodecKeys } from './codec-keys';
import { Failure } from '../session/failure-types';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** The key id a payload was sealed with, or undefined for a payload this codec did not encode. */
export function encryptedKeyId(payload: Payload): string | undefined {
  const encoding = payload.metadata?.encoding;
  if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) return undefined;
  const id = payload.metadata?.[KEY_ID_METADATA];
  return id ? fromUtf8.decode(id) : '';
}

export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly keys: CodecKeys) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys.current;
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: utf8.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8.encode(id) },
        data: new Uint8Array(sealed),
      };
    });
  }

  // Plain payloads pass through: any Temporal client (e.g. the CLI with --input JSON) must still be able to
  // signal a session, so only what this codec sealed is opened.
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const id = encryptedKeyId(payload);
      if (id === undefined) return payload;
      const key = this.keys.byId.get(id);
      if (!key) {
        throw ApplicationFailure.nonRetryable(
          `payload was encrypted with key id "${id}", which CODEC_KEY does not list (known: ${[...this.keys.byId.keys()].join(', ')})`,
          Failure.Codec.UnknownKey,
        );
      }
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES)
        throw ApplicationFailure.nonRetryable(`encrypted payload (key id "${id}") is truncated`, Failure.Codec.Corrupt);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw ApplicationFailure.nonRetryable(
          `encrypted payload does not open with key id "${id}": wrong key or tampered data`,
          Failure.Codec.Corrupt,
        );
      }
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
