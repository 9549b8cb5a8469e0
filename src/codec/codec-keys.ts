// CODEC_KEY parsing: one base64 key, or `id:base64,...` with the encrypting key first and older keys after it.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { PlatformError } from '../session/platform-error';

export interface CodecKey {
  id: string;
  key: Buffer;
}

export interface CodecKeys {
  /** Encrypts everything new. */
  current: CodecKey;
  /** Every key that may decrypt, the current one included, by id. */
  byId: ReadonlyMap<string, Buffer>;
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The id of a lone key: the first 8 hex chars of its sha256, so every process derives the same id. */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

// Key bytes never appear in a message: a typo in CODEC_KEY must not print the secret into a log.
const KeyBytesSchema = z
  .string()
  .trim()
  .refine((v) => BASE64.test(v) && v.length % 4 === 0, 'a key is not base64')
  .transform((v) => Buffer.from(v, 'base64'))
  .refine((b) => b.length === 32, 'a key is not 32 bytes (AES-256)');

const EntrySchema = z.string().transform((entry, ctx) => {
  const colon = entry.indexOf(':');
  if (colon < 0) {
    ctx.addIssue({ code: 'custom', message: 'an entry has no id: before its key' });
    return z.NEVER;
  }
  const id = entry.slice(0, colon).trim();
  if (!KEY_ID.test(id)) {
    ctx.addIssue({ code: 'custom', message: 'a key id must be 1-64 letters, digits, dot, dash or underscore' });
    return z.NEVER;
  }
  const key = KeyBytesSchema.safeParse(entry.slice(colon + 1));
  if (!key.success) {
    ctx.addIssue({ code: 'custom', message: `key ${id}: ${key.error.issues[0].message}` });
    return z.NEVER;
  }
  return { id, key: key.data };
});

export const CodecKeysSchema = z
  .string()
  .trim()
  .min(1, 'is empty')
  .transform((raw, ctx): CodecKeys => {
    const entries: CodecKey[] = [];
    if (!raw.includes(':')) {
      const key = KeyBytesSchema.safeParse(raw);
      if (!key.success) {
        ctx.addIssue({
          code: 'custom',
          message: `must be base64 of 32 bytes, or id:base64,... (${key.error.issues[0].message})`,
        });
        return z.NEVER;
      }
      entries.push({ id: keyIdOf(key.data), key: key.data });
    } else {
      for (const part of raw.split(',')) {
        const entry = EntrySchema.safeParse(part.trim());
        if (!entry.success) {
          ctx.addIssue({ code: 'custom', message: `must be id:base64,... (${entry.error.issues[0].message})` });
          return z.NEVER;
        }
        entries.push(entry.data);
      }
    }
    const byId = new Map<string, Buffer>();
    for (const e of entries) {
      if (byId.has(e.id)) {
        ctx.addIssue({ code: 'custom', message: `lists key id ${e.id} twice` });
        return z.NEVER;
      }
      byId.set(e.id, e.key);
    }
    return { current: entries[0], byId };
  });

export class CodecKeyError extends PlatformError {}

/** Parses a CODEC_KEY value; the error names CODEC_KEY and never repeats the key material. */
export function parseCodecKeys(raw: string): CodecKeys {
  const r = CodecKeysSchema.safeParse(raw);
  if (!r.success) throw new CodecKeyError(`CODEC_KEY ${r.error.issues.map((i) => i.message).join('; ')}`);
  return r.data;
}

/** For config validation: the problem with a CODEC_KEY value, without the variable's name, or undefined. */
export function codecKeyProblem(raw: string): string | undefined {
  const r = CodecKeysSchema.safeParse(raw);
  return r.success ? undefined : r.error.issues.map((i) => i.message).join('; ');
}
