// Process configuration from the environment, validated once; the error names every bad variable.
import { z } from 'zod';
import path from 'node:path';
import { codecKeyProblem } from './codec/keys';

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const base64Key = optional.refine((v) => v === undefined || Buffer.from(v, 'base64').length === 32, 'must be base64 of 32 bytes');

export const ConfigSchema = z.object({
  TEMPORAL_ADDRESS: z.string().regex(/^[^:\s]+:\d+$/, 'must be HOST:PORT').default('localhost:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  ANTHROPIC_API_KEY: optional,
  ANTHROPIC_BASE_URL: optional.refine((v) => v === undefined || /^https?:\/\//.test(v), 'must be an http(s) URL'),
  AGENT_MODEL: optional,
  DOCKER_HOST: optional,
  SANDBOX_IMAGE: optional,
  VAULT_KEY: base64Key,
  // One base64 key, or `id:base64,...` whose first key encrypts and the rest still decrypt (rotation).
  CODEC_KEY: optional.superRefine((v, ctx) => {
    const problem = v === undefined ? undefined : codecKeyProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  CODEC_SERVER_TOKEN: optional,
  DATA_DIR: z.string().min(1).default('.data'),
  TEMPORAL_CLI: optional,
  // Brain and hands workers publish live deltas for `agents watch` here; `off` turns it off.
  STREAM_LISTEN: z
    .string()
    .regex(/^(off|[^\s]+:\d{1,5})$/, 'must be HOST:PORT (port 0 picks a free one) or off')
    .default('127.0.0.1:0'),
  STREAM_URL: optional.refine((v) => v === undefined || /^https?:\/\/[^\s/]+\/?$/.test(v), 'must be an http(s) URL with no path, e.g. http://brain-1:7400'),
});

export type Config = z.infer<typeof ConfigSchema> & { dataDir: string };

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return { ...result.data, dataDir: path.resolve(result.data.DATA_DIR) };
}
