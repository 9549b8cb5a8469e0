// The payload codec, CODEC_KEY parsing and rotation, local key files and the codec server, without a Temporal server.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  decodeFromPayloadsAtIndex,
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  encodeToPayloads,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  createDataConverter,
  keyIdOf,
  parseCodecKeys,
} from '../src/codec';
import { CodecServer } from '../src/codec/codec-server';
import { loadConfig } from '../src/config';
import { ensureKeys, loadCodecKey, loadVaultKey } from '../src/key-files';

const key = () => randomBytes(32).toString('base64');
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const plain = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

describe('EncryptionCodec', () => {
  it('encrypts each whole payload under the current key id and decodes it back exactly', async () => {
    const k = key();
    const codec = new EncryptionCodec(parseCodecKeys(k));
    const original = [plain({ text: 'the launch code is 0000' }), plain('second'), plain(undefined)];
    const encoded = await codec.encode(original);
    expect(encoded).toHaveLength(3);
    for (const p of encoded) {
      expect(text(p.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
      expect(text(p.metadata?.[KEY_ID_METADATA])).toBe(keyIdOf(Buffer.from(k, 'base64')));
      // Metadata (the original encoding) is sealed too, so only the codec's own two keys show.
      expect(Object.keys(p.metadata ?? {}).sort()).toEqual([KEY_ID_METADATA, 'encoding'].sort());
    }
    expect(Buffer.from(encoded[0].data!).includes('launch code')).toBe(false);
    expect(Buffer.from(encoded[0].data!).includes('json/plain')).toBe(false);
    const decoded = await codec.decode(encoded);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      { text: 'the launch code is 0000' },
      'second',
      undefined,
    ]);
    expect(decoded.map((p) => text(p.metadata?.encoding))).toEqual(original.map((p) => text(p.metadata?.encoding)));
  });

  it('uses a fresh IV each time, so equal payloads never encrypt alike', async () => {
    const codec = new EncryptionCodec(parseCodecKeys(key()));
    const [a, b] = await codec.encode([plain('same'), plain('same')]);
    expect(Buffer.from(a.data!).subarray(0, 12).equals(Buffer.from(b.data!).subarray(0, 12))).toBe(false);
    expect(Buffer.from(a.data!).equals(Buffer.from(b.data!))).toBe(false);
  });

  it('passes plain payloads from other clients through unchanged', async () => {
    const codec = new EncryptionCodec(parseCodecKeys(key()));
    const fromCli = plain({ text: 'hi' });
    const binary: Payload = { metadata: { encoding: new TextEncoder().encode('binary/null') } };
    const [a, b] = await codec.decode([fromCli, binary]);
    expect(a).toBe(fromCli);
    expect(b).toBe(binary);
  });

  it('decodes data encrypted with an old key once that key is listed after a new current key', async () => {
    const oldKey = key();
    const newKey = key();
    const before = await new EncryptionCodec(parseCodecKeys(`old:${oldKey}`)).encode([plain('written last year')]);
    const rotated = new EncryptionCodec(parseCodecKeys(`new:${newKey},old:${oldKey}`));
    expect(defaultPayloadConverter.fromPayload((await rotated.decode(before))[0])).toBe('written last year');
    const after = await rotated.encode([plain('written today')]);
    expect(text(after[0].metadata?.[KEY_ID_METADATA])).toBe('new');
    // Dropping the old key makes old data unreadable, with an error that says which key is missing.
    await expect(new EncryptionCodec(parseCodecKeys(`new:${newKey}`)).decode(before)).rejects.toThrow(
      /key id "old".*CODEC_KEY does not list/,
    );
  });

  it('names the missing key id when a payload was encrypted with an unknown key', async () => {
    const sealed = await new EncryptionCodec(parseCodecKeys(key())).encode([plain('x')]);
    const id = text(sealed[0].metadata?.[KEY_ID_METADATA]);
    const err = await new EncryptionCodec(parseCodecKeys(key())).decode(sealed).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as Error).message).toContain(`"${id}"`);
  });

  it('rejects tampered ciphertext instead of returning garbage', async () => {
    const keys = parseCodecKeys(key());
    const [p] = await new EncryptionCodec(keys).encode([plain('integrity')]);
    const data = Buffer.from(p.data!);
    data[20] ^= 1;
    await expect(new EncryptionCodec(keys).decode([{ ...p, data }])).rejects.toThrow(/wrong key or tampered/);
  });
});

describe('CODEC_KEY', () => {
  it('gives a lone key the id of the first 8 hex chars of its sha256', () => {
    const k = key();
    const keys = parseCodecKeys(k);
    expect(keys.current.id).toBe(createHash('sha256').update(Buffer.from(k, 'base64')).digest('hex').slice(0, 8));
    expect([...keys.byId.keys()]).toEqual([keys.current.id]);
  });

  it('reads id:base64,... with the first entry as the current key', () => {
    const keys = parseCodecKeys(` k2:${key()} , k1:${key()}`);
    expect(keys.current.id).toBe('k2');
    expect([...keys.byId.keys()]).toEqual(['k2', 'k1']);
  });

  it.each([
    ['an empty value', '', /CODEC_KEY is empty/],
    ['a value that is not base64', 'not-a-key', /CODEC_KEY must be base64 of 32 bytes/],
    ['a 16-byte key', randomBytes(16).toString('base64'), /CODEC_KEY .*not 32 bytes/],
    ['a key id listed twice', `a:${key()},a:${key()}`, /CODEC_KEY lists key id a twice/],
    ['a list entry without an id', `a:${key()},${key()}`, /CODEC_KEY .*no id/],
    ['a bad key id', `bad id!:${key()}`, /CODEC_KEY .*key id must be/],
    ['a 31-byte key in a list', `a:${randomBytes(31).toString('base64')}`, /CODEC_KEY .*key a: a key is not 32 bytes/],
  ])('rejects %s with a message naming CODEC_KEY', (_label, raw, message) => {
    expect(() => parseCodecKeys(raw)).toThrow(message);
  });

  it('is validated with the rest of the configuration, without echoing the key', () => {
    const secret = randomBytes(31).toString('base64');
    let message = '';
    try {
      loadConfig({ CODEC_KEY: secret });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/invalid configuration: CODEC_KEY/);
    expect(message).not.toContain(secret);
    expect(loadConfig({ CODEC_KEY: `a:${key()},b:${key()}` }).CODEC_KEY).toMatch(/^a:/);
  });
});

describe('createDataConverter', () => {
  it('encrypts failure messages and stack traces along with payloads', async () => {
    const converter = loadDataConverter(createDataConverter(key()));
    const failure = await encodeErrorToFailure(
      converter,
      ApplicationFailure.create({ message: 'token sk-12345 rejected', type: 'Test.Failure' }),
    );
    expect(failure.message).toBe('Encoded failure');
    expect(failure.stackTrace).toBe('');
    expect(text(failure.encodedAttributes?.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(JSON.stringify(failure)).not.toContain('sk-12345');
    expect(Buffer.from(failure.encodedAttributes!.data!).includes('sk-12345')).toBe(false);
    const back = await decodeOptionalFailureToOptionalError(converter, failure);
    expect(back?.message).toBe('token sk-12345 rejected');
    const payloads = await encodeToPayloads(converter, { secret: 'x' });
    expect(text(payloads![0].metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(await decodeFromPayloadsAtIndex(converter, 0, payloads)).toEqual({ secret: 'x' });
  });
});

describe('local key files', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ma-keys-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('generates each key once with mode 0600 in a 0700 directory, and reuses it', () => {
    const first = ensureKeys(dir, {});
    expect(Buffer.from(first.codecKey, 'base64')).toHaveLength(32);
    expect(Buffer.from(first.vaultKey, 'base64')).toHaveLength(32);
    expect(first.codecKey).not.toBe(first.vaultKey);
    expect(fs.statSync(path.join(dir, 'keys')).mode & 0o777).toBe(0o700);
    for (const f of ['codec.key', 'vault.key']) expect(fs.statSync(path.join(dir, 'keys', f)).mode & 0o777).toBe(0o600);
    expect(ensureKeys(dir, {})).toEqual(first);
    expect(fs.readdirSync(path.join(dir, 'keys')).sort()).toEqual(['codec.key', 'vault.key']);
  });

  it('prefers the environment and never writes a file for a key that is set', () => {
    const env = { CODEC_KEY: key(), VAULT_KEY: key() };
    expect(ensureKeys(dir, env)).toEqual({ codecKey: env.CODEC_KEY, vaultKey: env.VAULT_KEY });
    expect(fs.existsSync(path.join(dir, 'keys', 'codec.key'))).toBe(false);
  });

  it('loads the codec key alone, so a brain worker never touches the vault key', () => {
    const codecKey = loadCodecKey({ CODEC_KEY: undefined, dataDir: dir });
    expect(parseCodecKeys(codecKey).current.key).toHaveLength(32);
    expect(fs.readdirSync(path.join(dir, 'keys'))).toEqual(['codec.key']);
    expect(loadVaultKey({ VAULT_KEY: undefined, dataDir: dir })).not.toBe(codecKey);
  });

  it('refuses a corrupt key file with an error naming it', () => {
    fs.mkdirSync(path.join(dir, 'keys'));
    fs.writeFileSync(path.join(dir, 'keys', 'codec.key'), 'garbage');
    expect(() => loadCodecKey({ CODEC_KEY: undefined, dataDir: dir })).toThrow(
      /CODEC_KEY from .*codec\.key must be base64/,
    );
  });
});

describe('codec server', () => {
  const UI = 'http://localhost:8233';
  let server: CodecServer;
  let url: string;
  const keys = parseCodecKeys(key());
  const codec = new EncryptionCodec(keys);

  async function call(route: string, init: { method?: string; headers?: Record<string, string>; body?: unknown }) {
    const res = await fetch(`${url}${route}`, {
      method: init.method ?? 'POST',
      headers: init.headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { status: res.status, headers: res.headers, body: await res.text() };
  }
  const json = { 'Content-Type': 'application/json', 'X-Namespace': 'default' };

  describe('without a token (local development)', () => {
    beforeAll(async () => {
      server = new CodecServer({ codec, namespaces: ['default'] });
      url = await server.start();
    });
    afterAll(() => server.stop());

    it('answers the Web UI preflight with CORS for its origin only', async () => {
      const ok = await call('/decode', {
        method: 'OPTIONS',
        headers: {
          Origin: UI,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type,x-namespace',
        },
      });
      expect(ok.status).toBe(204);
      expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
      expect(ok.headers.get('access-control-allow-headers')).toBe('Content-Type, X-Namespace, Authorization');
      expect(ok.headers.get('access-control-allow-methods')).toMatch(/POST/);
      const evil = await call('/decode', { method: 'OPTIONS', headers: { Origin: 'http://evil.example' } });
      expect(evil.status).toBe(403);
      expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('encodes and decodes proto JSON payloads for an allowed origin', async () => {
      const input = {
        payloads: [
          {
            metadata: { encoding: Buffer.from('json/plain').toString('base64') },
            data: Buffer.from('"hello"').toString('base64'),
          },
        ],
      };
      const enc = await call('/encode', { headers: { ...json, Origin: UI }, body: input });
      expect(enc.status).toBe(200);
      expect(enc.headers.get('access-control-allow-origin')).toBe(UI);
      const encoded = JSON.parse(enc.body) as { payloads: { metadata: Record<string, string>; data: string }[] };
      expect(Buffer.from(encoded.payloads[0].metadata.encoding, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
      const dec = await call('/decode', { headers: { ...json, Origin: UI }, body: encoded });
      expect(dec.status).toBe(200);
      expect(JSON.parse(dec.body)).toEqual(input);
    });

    it('refuses requests with no origin, a foreign origin or a namespace it does not serve, with no payload data', async () => {
      const [sealed] = await codec.encode([plain('confidential')]);
      const body = {
        payloads: [
          {
            metadata: {
              encoding: Buffer.from(sealed.metadata!.encoding!).toString('base64'),
              [KEY_ID_METADATA]: Buffer.from(sealed.metadata![KEY_ID_METADATA]!).toString('base64'),
            },
            data: Buffer.from(sealed.data!).toString('base64'),
          },
        ],
      };
      for (const [headers, status] of [
        [json, 401],
        [{ ...json, Origin: 'http://evil.example' }, 403],
        [{ ...json, Origin: UI, 'X-Namespace': 'other' }, 403],
      ] as const) {
        const r = await call('/decode', { headers, body });
        expect(r.status).toBe(status);
        expect(r.body).not.toContain('payloads');
        expect(r.body).not.toContain(Buffer.from('confidential').toString('base64').slice(0, 12));
      }
    });

    it('rejects bad requests with a clear status', async () => {
      expect((await call('/other', { headers: { ...json, Origin: UI }, body: { payloads: [] } })).status).toBe(404);
      expect((await call('/decode', { method: 'GET', headers: { Origin: UI } })).status).toBe(405);
      expect(
        (await call('/decode', { headers: { Origin: UI, 'X-Namespace': 'default' }, body: { payloads: [] } })).status,
      ).toBe(415);
      const bad = await call('/decode', { headers: { ...json, Origin: UI }, body: { nope: 1 } });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatch(/invalid body/);
      const unknownKey = await new EncryptionCodec(parseCodecKeys(key())).encode([plain('x')]);
      const r = await call('/decode', {
        headers: { ...json, Origin: UI },
        body: {
          payloads: unknownKey.map((p) => ({
            metadata: Object.fromEntries(
              Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')]),
            ),
            data: Buffer.from(p.data!).toString('base64'),
          })),
        },
      });
      expect(r.status).toBe(400);
      expect(r.body).toMatch(/CODEC_KEY does not list/);
    });
  });

  describe('with CODEC_SERVER_TOKEN', () => {
    const token = randomBytes(16).toString('hex');
    beforeAll(async () => {
      server = new CodecServer({ codec, token });
      url = await server.start();
    });
    afterAll(() => server.stop());

    it('requires the bearer token; an allowed origin alone is not enough', async () => {
      const body = { payloads: [] };
      expect((await call('/decode', { headers: { ...json, Authorization: `Bearer ${token}` }, body })).status).toBe(
        200,
      );
      const originOnly = await call('/decode', { headers: { ...json, Origin: UI }, body });
      expect(originOnly.status).toBe(401);
      expect(originOnly.headers.get('www-authenticate')).toBe('Bearer');
      expect((await call('/decode', { headers: { ...json, Authorization: `Bearer ${token}x` }, body })).status).toBe(
        401,
      );
    });
  });
});
