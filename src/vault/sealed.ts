// Credential secrets sealed at rest: a libsodium sealed box (X25519 + XSalsa20-Poly1305) to the vault public key.
// The API process holds only the public half, so it can seal a secret but never open one; the private half is
// derived from VAULT_KEY, which only hands and tools workers hold.
import crypto from 'node:crypto';
import sodium from 'libsodium-wrappers';
import { z } from 'zod';
import { PlatformError } from '../session/platform-error';

export class SealError extends PlatformError {}

const INFO = 'managed-agents credential sealing v1';

function seedOf(vaultKey: string): Uint8Array {
  const master = Buffer.from(vaultKey, 'base64');
  if (master.length !== 32) throw new SealError('VAULT_KEY must be base64 of 32 bytes');
  return new Uint8Array(crypto.hkdfSync('sha256', master, Buffer.alloc(0), INFO, 32));
}

async function keyPairOf(vaultKey: string) {
  await sodium.ready;
  return sodium.crypto_box_seed_keypair(seedOf(vaultKey));
}

/** The public half for VAULT_KEY, base64: what the API process is given as VAULT_PUBLIC_KEY. */
export async function vaultPublicKey(vaultKey: string): Promise<string> {
  return Buffer.from((await keyPairOf(vaultKey)).publicKey).toString('base64');
}

export function publicKeyProblem(raw: string): string | undefined {
  return /^[A-Za-z0-9+/]+={0,2}$/.test(raw) && Buffer.from(raw, 'base64').length === 32
    ? undefined
    : 'must be base64 of 32 bytes';
}

/** Which secret a box holds; a box copied onto another credential or field does not open there. */
export interface SealBinding {
  credentialId: string;
  vaultId: string;
  field: string;
}

const PayloadSchema = z.object({
  v: z.literal(1),
  credential_id: z.string(),
  vault_id: z.string(),
  field: z.string(),
  value: z.string(),
});

/** Seals one secret to `publicKey` (base64), bound to its credential and field; returns base64. */
export async function sealSecret(publicKey: string, binding: SealBinding, value: string): Promise<string> {
  if (publicKeyProblem(publicKey)) throw new SealError('the vault public key must be base64 of 32 bytes');
  await sodium.ready;
  const payload = JSON.stringify({
    v: 1,
    credential_id: binding.credentialId,
    vault_id: binding.vaultId,
    field: binding.field,
    value,
  });
  return Buffer.from(sodium.crypto_box_seal(payload, Buffer.from(publicKey, 'base64'))).toString('base64');
}

/** Opens a sealed box with VAULT_KEY. Only hands and tools workers call this. */
export async function openSecret(vaultKey: string, binding: SealBinding, sealed: string): Promise<string> {
  const { publicKey, privateKey } = await keyPairOf(vaultKey);
  let text: string;
  try {
    text = sodium.crypto_box_seal_open(Buffer.from(sealed, 'base64'), publicKey, privateKey, 'text');
  } catch {
    throw new SealError(`credential ${binding.credentialId} does not open with this VAULT_KEY`);
  }
  const payload = PayloadSchema.safeParse(JSON.parse(text));
  const p = payload.data;
  if (!p || p.credential_id !== binding.credentialId || p.vault_id !== binding.vaultId || p.field !== binding.field) {
    throw new SealError(`credential ${binding.credentialId} holds a box sealed for another credential or field`);
  }
  return p.value;
}
