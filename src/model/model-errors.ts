// Maps Anthropic SDK errors to Temporal failures in one place: Temporal owns the retries.
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { Failure } from '../session/failure-types';

const NON_RETRYABLE: Record<number, string> = {
  400: Failure.Model.InvalidRequest,
  401: Failure.Model.Authentication,
  403: Failure.Model.PermissionDenied,
  404: Failure.Model.NotFound,
  413: Failure.Model.RequestTooLarge,
};

/** Error types an `error` event mid-stream can carry that a retry would not fix. */
const STREAM_NON_RETRYABLE = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
]);

/** Reads `retry-after-ms` or `retry-after` (seconds or an HTTP date) into milliseconds. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Turns any error from a model call into an ApplicationFailure with a namespaced type. */
export function toModelFailure(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof Anthropic.APIConnectionError) {
    return ApplicationFailure.create({
      message: `connection to the model API failed: ${err.message}`,
      type: Failure.Model.Connection,
      cause: err,
    });
  }
  if (err instanceof Anthropic.APIError && typeof err.status === 'number') {
    const status = err.status;
    const message = `model API returned ${status}: ${err.message}`;
    if (isRetryableStatus(status)) {
      const type =
        status === 429
          ? Failure.Model.RateLimited
          : status === 529
            ? Failure.Model.Overloaded
            : status >= 500
              ? Failure.Model.Server
              : `ModelError.Status${status}`;
      const delay = retryAfterMs(err.headers);
      // The delay goes in the details too: a workflow that waits for the retry itself reads it there.
      return ApplicationFailure.create({
        message,
        type,
        ...(delay !== undefined ? { nextRetryDelay: delay, details: [{ retryAfterMs: delay }] } : {}),
      });
    }
    return ApplicationFailure.create({
      message,
      type: NON_RETRYABLE[status] ?? `ModelError.Status${status}`,
      nonRetryable: true,
    });
  }
  if (err instanceof Anthropic.APIError) {
    // An `error` event in the middle of a stream: no status, only the error's type.
    const type =
      (err as { type?: string }).type ?? (err.error as { error?: { type?: string } } | undefined)?.error?.type;
    const message = `model API stream error${type ? ` ${type}` : ''}: ${err.message}`;
    if (type && STREAM_NON_RETRYABLE.has(type))
      return ApplicationFailure.create({ message, type: Failure.Model.InvalidRequest, nonRetryable: true });
    const mapped =
      type === 'overloaded_error'
        ? Failure.Model.Overloaded
        : type === 'rate_limit_error'
          ? Failure.Model.RateLimited
          : Failure.Model.Stream;
    return ApplicationFailure.create({ message, type: mapped });
  }
  const message = err instanceof Error ? err.message : String(err);
  return ApplicationFailure.create({ message: `model call failed: ${message}`, type: Failure.Model.Stream });
}
