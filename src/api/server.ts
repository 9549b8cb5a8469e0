// The Managed Agents API over HTTP: fastify with zod schemas (one set validates requests, types the handlers and
// generates GET /v1/openapi.json), API-key auth scoped to a workspace, and the API's error envelope for every error.
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  isResponseSerializationError,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Config } from '../config';
import { egressGate } from '../egress';
import { consoleRoutes } from './console-routes';
import { webhookEndpointRoutes } from './webhook-endpoints';
import { closeServer, httpUrl } from '../http/listen';
import { loadCodecKey, loadVaultPublicKey } from '../key-files';
import { createDataConverter } from '../codec';
import { BlobStore } from '../storage/blobs';
import { parsePriceTable } from '../observability/pricing';
import { openDb, type Db } from '../storage/db';
import { agentRoutes } from './agents';
import { newId } from './shared-fields';
import type { ApiApp, ApiDeps, ApiRoute } from './route-context';
import { environmentRoutes } from './environments';
import { ApiError, badRequest, type ErrorType } from './api-error';
import { authenticateRequest, authorizeRequest, registerPrincipalChecks } from './principals';
import { environmentWorkRoutes, workLeaseFrom } from './environment-work';
import { auditHook } from './audit';
import { quotasFrom, registerRateLimit } from './quotas';
import { vaultRoutes } from './vaults/vaults';
import { credentialRoutes } from './vaults/vault-credentials';
import { fileRoutes, fileLimitsFrom } from './files';
import { memoryStoreRoutes } from './memory-stores/memory-stores';
import { skillRoutes } from './skills/skills';
import { sessionRoutes, type SessionDeps } from './sessions/sessions';
import { deploymentRoutes } from './deployments';
import { schedulePolicyFrom } from './deployment-schedules';
import { findUnstorable, unstorableMessage } from './storable-text';

import { MANAGED_AGENTS_BETA, betaRequiredFor } from './beta';

export { MANAGED_AGENTS_BETA };
const OPENAPI_PATH = '/v1/openapi.json';
const BODY_LIMIT = 8 * 1024 * 1024;

function errorTypeFor(status: number): ErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** `/tools/0/name` → `tools.0.name`, with the part of the request it came from when that is not the body. */
function fieldOf(context: string | undefined, instancePath: string): string {
  const path = instancePath.replace(/^\//, '').replace(/\//g, '.');
  const where =
    context === 'querystring' ? 'query' : context === 'params' ? 'path' : context === 'headers' ? 'header' : 'body';
  if (where === 'body') return path || 'body';
  return path ? `${where} parameter ${path}` : where;
}

/** What a request sent that the route does not take, by name: `foo is not a parameter this endpoint takes`. */
function unknownKeys(keys: string[], noun: 'parameter' | 'field'): string {
  const shown = keys.slice(0, 5).map((k) => JSON.stringify(k.slice(0, 64)).slice(1, -1));
  return `${shown.join(', ')}${keys.length > 5 ? ` and ${keys.length - 5} more` : ''} ${keys.length === 1 ? `is not a ${noun}` : `are not ${noun}s`} this endpoint takes`;
}

/** Builds the server over `deps` (not listening yet). */
export async function buildApiServer(
  deps: ApiDeps,
  log: (m: string) => void = () => undefined,
  sessions?: SessionDeps,
): Promise<ApiApp> {
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    genReqId: () => newId('req'),
    return503OnClosing: true,
    // A URL the router cannot take (bad encoding, an over-long id) gets the envelope too, never fastify's own body.
    frameworkErrors: (err, req, reply) => {
      (reply as unknown as FastifyReply)
        .code(400)
        .header('request-id', req.id)
        .send({
          type: 'error',
          error: { type: 'invalid_request_error', message: `bad request URL: ${err.message}` },
          request_id: req.id,
        });
    },
  }).withTypeProvider<ZodTypeProvider>();
  // The route table, for docs/api.md's compatibility table (scripts/api-compat.ts).
  const routes: ApiRoute[] = [];
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat())
      if (method !== 'HEAD')
        routes.push({ method, url: r.url, ...(r.config?.refused ? { refused: r.config.refused } : {}) });
  });
  app.decorate('apiRoutes', routes);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'managed-agents: Managed Agents API', version: MANAGED_AGENTS_BETA },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    transform: jsonSchemaTransform,
    // The schemas routes name by id (`Agent`, `Session`...) land in components, so every `$ref` resolves.
    transformObject: jsonSchemaTransformObject,
  });

  app.addHook('onRequest', async (req, reply) => {
    req.requestId = req.id;
    reply.header('request-id', req.id);
    const path = req.url.split('?')[0];
    // A route that does not exist is a 404 whatever the request carries: the not-found handler answers it unchecked.
    if (req.is404 || path === OPENAPI_PATH || !path.startsWith('/v1/')) return;
    const who = await authenticateRequest(deps.db, req);
    const wanted = req.headers['anthropic-workspace-id'];
    if (typeof wanted === 'string' && wanted && wanted !== who.workspaceId)
      throw new ApiError(
        403,
        'permission_error',
        `this ${who.principal.kind === 'api_key' ? 'API key' : 'credential'} belongs to another workspace than ${wanted}`,
      );
    const beta = req.headers['anthropic-beta'];
    const betas = (Array.isArray(beta) ? beta.join(',') : (beta ?? '')).split(',').map((b) => b.trim());
    const required = betaRequiredFor(req.url);
    if (required && !betas.includes(required))
      throw new ApiError(400, 'invalid_request_error', `the anthropic-beta header must include ${required}`);
    req.workspaceId = who.workspaceId;
    req.workspace = who.workspace;
    if (who.principal.kind === 'api_key') req.apiKeyId = who.principal.keyId;
    req.principal = who.principal;
    await authorizeRequest(deps.db, req, who.principal);
  });
  // Per key, after the hook above has authenticated it; and the audit trail of every change.
  await registerRateLimit(app, deps.quotas);
  auditHook(app, deps.db, log);
  registerPrincipalChecks(app);

  // Before any route's schema: a string PostgreSQL cannot store, or JSON nested past reason, is a 400 naming its field.
  app.addHook('preValidation', async (req) => {
    for (const [context, value] of [
      ['body', req.body],
      ['querystring', req.query],
      ['params', req.params],
    ] as const) {
      const bad = findUnstorable(value);
      if (bad) throw badRequest(unstorableMessage(fieldOf(context, bad.pointer), bad));
    }
  });

  // A route without a query or body schema takes none: what it would ignore is refused instead.
  app.addHook('preValidation', async (req) => {
    if (req.is404 || !req.url.startsWith('/v1/')) return;
    const schema = req.routeOptions.schema;
    const keys = Object.keys((req.query ?? {}) as object);
    if (!schema?.querystring && keys.length > 0)
      throw new ApiError(400, 'invalid_request_error', `query: ${unknownKeys(keys, 'parameter')}`);
    const body = req.body as unknown;
    if (
      !schema?.body &&
      body !== undefined &&
      body !== null &&
      !(typeof body === 'object' && Object.keys(body).length === 0)
    ) {
      throw new ApiError(400, 'invalid_request_error', `body: ${req.method} ${req.routeOptions.url} takes no body`);
    }
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    let status: number;
    let type: ErrorType;
    let message: string;
    let errorCode: string | undefined;
    let fields: Record<string, string> | undefined;
    let details: Record<string, unknown> | undefined;
    const down = err instanceof ApiError ? undefined : dependencyDown(err);
    if (err instanceof ApiError) {
      ({ status, type, message } = err);
      errorCode = err.extra.errorCode;
      details = err.extra.details;
      fields = err.extra.fields;
      for (const [k, v] of Object.entries(err.extra.headers ?? {})) reply.header(k, v);
    } else if (hasZodFastifySchemaValidationErrors(err)) {
      status = 400;
      type = 'invalid_request_error';
      message = err.validation
        .slice(0, 5)
        .map(
          (v) =>
            `${fieldOf(err.validationContext, v.instancePath)}: ${v.keyword === 'unrecognized_keys' ? unknownKeys((v.params as { keys?: string[] }).keys ?? [], err.validationContext === 'querystring' ? 'parameter' : 'field') : v.message}`,
        )
        .join('; ');
    } else if (down) {
      // Temporal or the database is unreachable: nothing was done, and the same request may succeed later.
      log(`api: ${req.method} ${req.url.split('?')[0]} failed (${req.id}): ${down} is unreachable`);
      reply.header('retry-after', '2');
      status = 503;
      type = 'api_error';
      message = `${down} is unreachable; nothing was changed, retry shortly`;
    } else if (isResponseSerializationError(err) || !err.statusCode || err.statusCode >= 500) {
      // A bug of ours: the client learns only that it happened; the log gets the message, never a request body.
      log(`api: ${req.method} ${req.url.split('?')[0]} failed (${req.id}): ${err.message.split('\n')[0]}`);
      status = 500;
      type = 'api_error';
      message = 'internal error';
    } else {
      status = err.statusCode;
      type = errorTypeFor(status);
      message = err.message;
    }
    reply
      .code(status)
      .header('request-id', req.id)
      .type('application/json')
      .send({
        type: 'error',
        error: { ...fields, type, message, ...(errorCode ? { details: { error_code: errorCode, ...details } } : {}) },
        request_id: req.id,
      });
  });

  app.setNotFoundHandler((req, reply) => {
    reply
      .code(404)
      .header('request-id', req.id)
      .send({
        type: 'error',
        error: { type: 'not_found_error', message: `no route ${req.method} ${req.url.split('?')[0]}` },
        request_id: req.id,
      });
  });

  agentRoutes(app, deps);
  environmentRoutes(app, deps);
  environmentWorkRoutes(app, deps);
  vaultRoutes(app, deps);
  credentialRoutes(app, deps);
  fileRoutes(app, deps);
  memoryStoreRoutes(app, deps);
  skillRoutes(app, deps);
  webhookEndpointRoutes(app, deps);
  if (sessions) sessionRoutes(app, deps, sessions, log);
  if (sessions) deploymentRoutes(app, deps, sessions.client);

  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  // The web console: static files outside /v1, calling the routes above like any other client.
  consoleRoutes(app, { prices: deps.prices });
  await app.ready();
  return app;
}

export interface RunningApi {
  url: string;
  db: Db;
  stop(): Promise<void>;
}

/**
 * Temporal, connected on first use, and the session log as the CLI reads it (the session archive, on the API's own
 * PostgreSQL when DATABASE_URL is set, plus the live runs), decoded with CODEC_KEY.
 */
async function sessionDepsFor(config: Config, db: Db): Promise<SessionDeps> {
  const { Client, Connection } = await import('@temporalio/client');
  const { createDataConverter, parseCodecKeys } = await import('../codec');
  const { loadCodecKey } = await import('../key-files');
  const { clientConnectionOptions } = await import('../temporal-connection');
  const { sessionArchive } = await import('../archive');
  const { ArchivedSessionLog, LiveSessionLog } = await import('../log/session-log');
  const codecKey = loadCodecKey(config);
  const dataConverter = createDataConverter(codecKey);
  const { clientInterceptors } = await import('../log/query-retry');
  const client = new Client({
    connection: Connection.lazy(clientConnectionOptions(config)),
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter,
    interceptors: clientInterceptors,
  });
  const archive = sessionArchive(config, dataConverter, db);
  return {
    client,
    archive,
    log: new ArchivedSessionLog(archive, new LiveSessionLog(client)),
    streamKey: parseCodecKeys(codecKey).current.key,
  };
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EPIPE']);

/**
 * Which dependency an error says is out of reach or overloaded, if one is: Temporal (gRPC UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, or a connection that fails), or PostgreSQL (a connection exception,
 * class 08, or the server shutting down, 57P0x).
 */
function dependencyDown(err: unknown): string | undefined {
  for (
    let e = err as { code?: unknown; cause?: unknown; name?: string; message?: string } | undefined, depth = 0;
    e && depth < 6;
    e = e.cause as typeof e, depth++
  ) {
    const code = e.code;
    // gRPC UNAVAILABLE (14), DEADLINE_EXCEEDED (4: a query no worker answered in time), RESOURCE_EXHAUSTED (8).
    if (
      code === 14 ||
      code === 4 ||
      code === 8 ||
      e.name === 'TransportError' ||
      /failed to connect|connection refused|transport error/i.test(e.message ?? '')
    )
      return 'Temporal';
    if (typeof code === 'string' && (/^08/.test(code) || /^57P0/.test(code))) return 'the database';
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'a dependency';
  }
  return undefined;
}

/**
 * Opens storage (migrating it), and serves the API on `listen` (HOST:PORT; default API_LISTEN). Sessions run on
 * the Temporal the config names, unless `sessions` is given.
 */
export async function startApiServer(
  config: Config,
  log: (m: string) => void,
  listen = config.API_LISTEN,
  sessions?: SessionDeps,
): Promise<RunningApi> {
  const db = await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir });
  try {
    const vaultPublicKey = await loadVaultPublicKey(config);
    const prices = parsePriceTable(config.MODEL_PRICES);
    const egress = await egressGate(config);
    const app = await buildApiServer(
      {
        db,
        vaultPublicKey,
        egress,
        quotas: quotasFrom(config),
        files: fileLimitsFrom(config),
        selfHostedToolTimeoutSeconds: Number(config.SELF_HOSTED_TOOL_TIMEOUT_SECONDS),
        workLease: workLeaseFrom(config),
        deploymentSchedules: schedulePolicyFrom(config),
        blobs: new BlobStore(db, createDataConverter(loadCodecKey(config))),
        ...('table' in prices ? { prices: prices.table } : {}),
      },
      log,
      sessions ?? (await sessionDepsFor(config, db)),
    );
    const colon = listen.lastIndexOf(':');
    const host = listen.slice(0, colon).replace(/^\[|\]$/g, '');
    await app.listen({ host, port: Number(listen.slice(colon + 1)) });
    const port = (app.server.address() as { port: number }).port;
    return {
      url: httpUrl(host, port),
      db,
      stop: async () => {
        await closeServer(app.server);
        await app.close();
        await db.close();
      },
    };
  } catch (e) {
    await db.close().catch(() => undefined);
    throw e;
  }
}
