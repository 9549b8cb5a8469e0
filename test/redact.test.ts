// Redaction against every encoding a tool could echo a credential in, over random secrets and random text.
import fc from 'fast-check';
import { redact } from '../src/vault';
import { base64Core } from '../src/vault/redact';
import { findSecret } from './helpers/find-secret';

const b64url = (b: Buffer) => b.toString('base64url');

/** Every encoding the redactor promises to catch, each applied to the secret inside its neighbours. */
const ENCODINGS: Record<string, (before: string, secret: string, after: string) => string> = {
  plain: (a, s, b) => a + s + b,
  hexLower: (a, s, b) => Buffer.from(a + s + b).toString('hex'),
  hexUpper: (a, s, b) =>
    Buffer.from(a + s + b)
      .toString('hex')
      .toUpperCase(),
  base64: (a, s, b) => Buffer.from(a + s + b).toString('base64'),
  base64url: (a, s, b) => b64url(Buffer.from(a + s + b)),
  base64Unpadded: (a, s, b) =>
    Buffer.from(a + s + b)
      .toString('base64')
      .replace(/=+$/, ''),
  urlEncoded: (a, s, b) => encodeURIComponent(a + s + b),
  urlEveryByte: (a, s, b) => [...Buffer.from(a + s + b)].map((x) => `%${x.toString(16).padStart(2, '0')}`).join(''),
  urlEveryByteUpper: (a, s, b) =>
    [...Buffer.from(a + s + b)].map((x) => `%${x.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  formEncoded: (a, s, b) => new URLSearchParams({ q: a + s + b }).toString(),
  json: (a, s, b) => JSON.stringify({ v: a + s + b }),
  jsonTwice: (a, s, b) => JSON.stringify(JSON.stringify({ v: a + s + b })),
  jsonEveryChar: (a, s, b) =>
    `"${[...(a + s + b)].map((c) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')).join('')}"`,
  jsonSlashes: (a, s, b) => JSON.stringify(a + s + b).replace(/\//g, '\\/'),
  base64InJson: (a, s, b) => JSON.stringify({ data: Buffer.from(a + s + b).toString('base64') }).replace(/\//g, '\\/'),
  base64UrlEncoded: (a, s, b) => encodeURIComponent(Buffer.from(a + s + b).toString('base64')),
  hexInJson: (a, s, b) => JSON.stringify({ h: Buffer.from(a + s + b).toString('hex') }),
};

// Tokens as services issue them, and arbitrary printable and non-ASCII text.
const tokenChars = fc.constantFrom(
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~+/='.split(''),
);
const secretArb = fc.oneof(
  fc.string({ unit: tokenChars, minLength: 8, maxLength: 64 }),
  fc.string({ unit: 'grapheme', minLength: 8, maxLength: 40 }),
  fc.uint8Array({ minLength: 6, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex')),
);
const textArb = fc.string({ unit: 'grapheme-ascii', maxLength: 40 });

describe('redaction', () => {
  it('removes a secret in every encoding, at every offset, from random surrounding text', () => {
    fc.assert(
      fc.property(
        secretArb,
        textArb,
        textArb,
        fc.constantFrom(...Object.keys(ENCODINGS)),
        textArb,
        textArb,
        (secret, before, after, encoding, outerBefore, outerAfter) => {
          const text = outerBefore + ENCODINGS[encoding](before, secret, after) + outerAfter;
          const out = redact(text, [secret]);
          expect({ encoding, found: findSecret(out, secret) }).toEqual({ encoding, found: [] });
        },
      ),
      { numRuns: 800 },
    );
  });

  it('covers all three byte alignments of base64 and base64url', () => {
    fc.assert(
      fc.property(secretArb, fc.integer({ min: 0, max: 8 }), (secret, pad) => {
        const prefix = 'p'.repeat(pad);
        for (const encode of [(b: Buffer) => b.toString('base64'), b64url]) {
          const out = redact(`x ${encode(Buffer.from(prefix + secret))} y`, [secret]);
          expect(findSecret(out, secret)).toEqual([]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('leaves text that holds no form of the secret as it was', () => {
    // Text from characters a secret made of lowercase letters cannot produce in any form: no digits, no
    // lowercase, so no hex digits beyond A-F and no base64 run of the secret's bytes.
    const plainText = fc.string({
      unit: fc.constantFrom(...'GHIJKLMNOPQRSTUVWXYZ .,:;!?()[]\n'.split('')),
      maxLength: 200,
    });
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'.split('')), minLength: 8, maxLength: 40 }),
        plainText,
        (secret, text) => {
          expect(redact(text, [secret])).toBe(text);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('removes each of several secrets, the longer first when one holds another', () => {
    const a = 'ghp_abcdefghijklmnop';
    const b = 'abcdefgh';
    const out = redact(`${a} ${Buffer.from(b).toString('hex')} ${Buffer.from(`:${a}`).toString('base64url')}`, [b, a]);
    // The unaligned base64 keeps the characters it shares with the leading colon.
    expect(out).toMatch(/^\*\*\* \*\*\* \w{0,2}\*\*\*\w?$/);
    expect([findSecret(out, a), findSecret(out, b)]).toEqual([[], []]);
  });

  it('keeps JSON valid when a secret sits inside an escaped string', () => {
    const secret = 'tok/en"with\\quotes';
    const json = JSON.stringify({ a: `before ${secret} after`, b: [secret] });
    const out = redact(json, [secret]);
    expect(JSON.parse(out)).toEqual({ a: 'before *** after', b: ['***'] });
  });

  it('names the characters of an unaligned base64 encoding that depend on the secret alone', () => {
    const secret = Buffer.from('secret-token');
    for (const offset of [0, 1, 2] as const) {
      const core = base64Core(secret, offset);
      for (const prefix of ['', 'a', 'ab', 'abc', 'abcd'].filter((p) => p.length % 3 === offset)) {
        for (const suffix of ['', 'z', 'zz'])
          expect(Buffer.from(`${prefix}secret-token${suffix}`).toString('base64')).toContain(core);
      }
    }
  });
});
