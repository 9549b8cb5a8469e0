// Configuration comes only from the environment: one error names every bad variable and why.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkRoleEnv, ConfigError, loadConfig } from '../src/config';
import { temporalConnectionOptions } from '../src/temporal-connection';
import { expectOneLineError, runAgents } from './helpers/cli';

const KEY = Buffer.alloc(32, 7).toString('base64');

it('lists each bad variable with its reason in one error', () => {
  const env = {
    TEMPORAL_ADDRESS: 'no-port',
    KEY_FILES: 'maybe',
    VAULT_KEY: 'c2hvcnQ=',
    ANTHROPIC_BASE_URL: 'ftp://x',
    HANDS_HOST_ID: 'has space',
    TEMPORAL_TLS_CLIENT_CERT_PATH: '/nonexistent/cert.pem',
  };
  let error: ConfigError | undefined;
  try {
    loadConfig(env, 'hands');
  } catch (e) {
    error = e as ConfigError;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect(error!.message.split('\n')).toHaveLength(1);
  expect(Object.fromEntries(error!.problems.map((p) => [p.variable, p.message]))).toEqual({
    TEMPORAL_ADDRESS: 'must be HOST:PORT',
    KEY_FILES: 'must be on or off',
    VAULT_KEY: 'must be base64 of 32 bytes',
    ANTHROPIC_BASE_URL: 'must be an http(s) URL',
    HANDS_HOST_ID: 'must be 1-100 letters, digits, dot, dash or underscore',
    TEMPORAL_TLS_CLIENT_CERT_PATH: 'must name a readable file',
    TEMPORAL_TLS_CLIENT_KEY_PATH: 'is required too: a client certificate and its key go together',
  });
});

it('requires what a role needs when keys come only from the environment', () => {
  const problems = (role: 'brain' | 'hands' | 'tools', env: Record<string, string>) => {
    try {
      loadConfig(env, role);
      return [];
    } catch (e) {
      return (e as ConfigError).problems.map((p) => p.variable);
    }
  };
  expect(problems('brain', { KEY_FILES: 'off' })).toEqual(['CODEC_KEY', 'ANTHROPIC_API_KEY']);
  expect(problems('hands', { KEY_FILES: 'off', CODEC_KEY: KEY })).toEqual(['VAULT_KEY']);
  expect(problems('tools', { KEY_FILES: 'off', CODEC_KEY: KEY, VAULT_KEY: KEY })).toEqual([]);
  // With key files allowed (local development) the keys default to DATA_DIR/keys.
  expect(problems('tools', {})).toEqual([]);
});

it('reads secrets from NAME_FILE, and refuses an unreadable file or both forms', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-config-'));
  try {
    fs.writeFileSync(path.join(dir, 'vault'), `${KEY}\n`);
    const config = loadConfig({ VAULT_KEY_FILE: path.join(dir, 'vault'), KEY_FILES: 'off', CODEC_KEY: KEY }, 'tools');
    expect(config.VAULT_KEY).toBe(KEY);
    expect(() =>
      loadConfig({
        VAULT_KEY_FILE: path.join(dir, 'missing'),
        CODEC_KEY: KEY,
        CODEC_KEY_FILE: path.join(dir, 'vault'),
      }),
    ).toThrow(
      /^invalid configuration: VAULT_KEY_FILE cannot be read \(ENOENT\): .*missing; CODEC_KEY_FILE and CODEC_KEY are both set; set one$/,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('checks the variables a deployment gives a role: unknown ones and secrets it must not hold', () => {
  expect(
    checkRoleEnv('brain', {
      TEMPORAL_ADDRESS: 'temporal:7233',
      KEY_FILES: 'off',
      CODEC_KEY_FILE: '/run/secrets/codec_key',
      ANTHROPIC_BASE_URL: 'http://model:8080',
    }),
  ).toEqual([]);
  expect(
    checkRoleEnv('brain', {
      TEMPORAL_ADRESS: 'temporal:7233',
      VAULT_KEY_FILE: '/run/secrets/vault_key',
      ANTHROPIC_BASE_URL: 'http://m',
    }).map((p) => p.variable),
  ).toEqual(['TEMPORAL_ADRESS', 'VAULT_KEY_FILE']);
});

it('turns TLS on for a client certificate or an API key', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-tls-'));
  try {
    for (const f of ['crt', 'key', 'ca']) fs.writeFileSync(path.join(dir, f), `${f}-pem`);
    const mtls = loadConfig({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'crt'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'key'),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'ca'),
      TEMPORAL_TLS_SERVER_NAME: 'frontend',
    });
    expect(temporalConnectionOptions(mtls)).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {
        clientCertPair: { crt: Buffer.from('crt-pem'), key: Buffer.from('key-pem') },
        serverRootCACertificate: Buffer.from('ca-pem'),
        serverNameOverride: 'frontend',
      },
    });
    expect(
      temporalConnectionOptions(
        loadConfig({ TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233', TEMPORAL_API_KEY: 'k' }),
      ),
    ).toEqual({ address: 'us-east-1.aws.api.temporal.io:7233', tls: true, apiKey: 'k' });
    expect(temporalConnectionOptions(loadConfig({}))).toEqual({ address: 'localhost:7233' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('refuses to start a worker on a bad environment with one line naming each variable', async () => {
  const r = await runAgents('temporal', ['worker', '--role', 'brain'], {
    KEY_FILES: 'off',
    CODEC_KEY: '',
    ANTHROPIC_API_KEY: '',
    ANTHROPIC_BASE_URL: '',
  });
  expectOneLineError(
    r,
    /^error: invalid configuration: CODEC_KEY is required with KEY_FILES=off \(set CODEC_KEY or CODEC_KEY_FILE\); ANTHROPIC_API_KEY is missing: the brain role calls the model; set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL .*; TEMPORAL_ADDRESS must be HOST:PORT\n$/,
  );
});
