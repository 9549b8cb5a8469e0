// Process configuration from the environment, validated once; the error names every bad variable.
import { z } from 'zod';
import path from 'node:path';
import { codecKeyProblem } from './codec/keys';
import { LOG_LEVELS } from './observability/log-levels';
import { parsePriceTable } from './observability/pricing';

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
  /** Worker log level; lines are JSON on stderr. */
  LOG_LEVEL: z.enum(LOG_LEVELS).default('INFO'),
  /** `1` turns on OpenTelemetry tracing (OTLP/HTTP to localhost:4318 unless an endpoint is set). */
  AGENTS_OTEL: z.enum(['0', '1']).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional.refine((v) => v === undefined || /^https?:\/\//.test(v), 'must be an http(s) URL'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional.refine((v) => v === undefined || /^https?:\/\//.test(v), 'must be an http(s) URL'),
  /** JSON price table merged over the built-in one: {"model": {"input": USD per Mtok, "output": ..., "cacheRead": ..., "cacheWrite": ...}}. */
  MODEL_PRICES: optional.superRefine((v, ctx) => {
    const r = parsePriceTable(v);
    if ('problem' in r) ctx.addIssue({ code: 'custom', message: r.problem });
  }),
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
