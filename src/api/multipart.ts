// multipart/form-data for the routes that take uploads (files, skills), and only for them: @fastify/multipart is
// registered inside an encapsulated scope whose routes take nothing else, so every JSON route parses as before.
import fastifyMultipart from '@fastify/multipart';
import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { ApiError, badRequest } from './api-error';
import type { ApiApp } from './route-context';

export interface MultipartLimits {
  /** The most bytes one file part may hold; a part past it is cut there and its `file.truncated` set. */
  fileBytes: number;
  /** File parts a request may carry; more is a FilesLimit error. Default 1. */
  files?: number;
  /** Non-file fields a request may carry. Default 8. */
  fields?: number;
  /** The most bytes of one field's value. Default 1 KiB. */
  fieldBytes?: number;
  /** Field names whose parts are files even without a `filename` (e.g. `file`). */
  fileFields?: string[];
}

/**
 * Registers `routes` in a scope of `app` where a request body must be multipart/form-data (anything else is a 400
 * naming the route), read with `req.parts()` under `limits`.
 */
export function multipartScope(app: ApiApp, limits: MultipartLimits, routes: (scope: ApiApp) => void): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (req, _payload, done) =>
      done(badRequest(`body: ${req.method} ${req.routeOptions.url} takes multipart/form-data`), undefined),
    );
    const fileFields = new Set(limits.fileFields ?? []);
    await scope.register(fastifyMultipart, {
      throwFileSizeLimit: false,
      limits: {
        fileSize: limits.fileBytes,
        files: limits.files ?? 1,
        fields: limits.fields ?? 8,
        fieldSize: limits.fieldBytes ?? 1024,
        fieldNameSize: 100,
        parts: (limits.files ?? 1) + (limits.fields ?? 8),
        headerPairs: 32,
      },
      isPartAFile: (name: string | undefined, _type: string | undefined, filename: string | undefined) =>
        filename !== undefined || (name !== undefined && fileFields.has(name)),
    });
    routes(scope as unknown as ApiApp);
  });
}

/** A parser error of @fastify/multipart (or busboy) as the 400 a client can act on; other errors unchanged. */
export function multipartError(e: unknown, limits: MultipartLimits): unknown {
  if (e instanceof ApiError) return e;
  const code = (e as { code?: unknown }).code;
  const message = (e as Error | undefined)?.message ?? '';
  if (code === 'FST_FILES_LIMIT')
    return badRequest(`body: at most ${limits.files ?? 1} file part${(limits.files ?? 1) === 1 ? '' : 's'}`);
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT')
    return badRequest(`body: more parts than this endpoint takes (at most ${limits.fields ?? 8} fields)`);
  if (code === 'FST_PROTO_VIOLATION') return badRequest('body: a part is named after an object prototype property');
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') return badRequest('body: a field marked application/json is not JSON');
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') return badRequest('body: the request is not multipart/form-data');
  if (code === 'FST_MP_PREMATURE_CLOSE' || /multipart|boundary|terminated early|unexpected end/i.test(message))
    return badRequest(`body: malformed multipart/form-data (${message.split('\n')[0].slice(0, 200)})`);
  return e;
}

/** Reads and discards what is left of a request whose upload was refused, so the client receives the answer. */
export function discardRest(req: FastifyRequest): void {
  if (!req.raw.readableEnded) req.raw.resume();
}

export type { Multipart };
