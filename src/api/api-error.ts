// The API's errors: one class the routes throw, and the envelope every error answers with.
import { z } from 'zod';
import { PlatformError } from '../session/platform-error';

export const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
] as const;
/** The memory stores' own 409s (`BetaManagedAgentsErrorObject`): a failed precondition, a path taken, a conflict. */
export const MEMORY_ERROR_TYPES = [
  'memory_precondition_failed_error',
  'memory_path_conflict_error',
  'conflict_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number] | (typeof MEMORY_ERROR_TYPES)[number];

export const ErrorEnvelopeSchema = z
  .object({
    type: z.literal('error'),
    error: z.object({
      type: z.string(),
      message: z.string(),
      details: z.looseObject({ error_code: z.string() }).optional(),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'ErrorResponse' });

export class ApiError extends PlatformError {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly extra: {
      errorCode?: string;
      /** More of `error.details` beside `error_code` (a refused heartbeat's `current_state`); only with `errorCode`. */
      details?: Record<string, unknown>;
      headers?: Record<string, string>;
      /** Fields of the error object beside `type` and `message` (`conflicting_path`...). */
      fields?: Record<string, string>;
    } = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, errorCode?: string) =>
  new ApiError(400, 'invalid_request_error', message, { errorCode });
export const notFound = (what: string, id: string) => new ApiError(404, 'not_found_error', `${what} ${id} not found`);
/** A real conflict: the SDK must not resend it, so `x-should-retry: false`. */
export const conflict = (message: string) =>
  new ApiError(409, 'invalid_request_error', message, { headers: { 'x-should-retry': 'false' } });
