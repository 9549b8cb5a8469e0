// The failure converter for clients, workers and the workflow sandbox (a worker's failureConverterPath): failure
// messages and stack traces move into a payload, so the codec encrypts them too.
import {
  ApplicationFailure,
  DefaultFailureConverter,
  type PayloadConverter,
  type ProtoFailure,
} from '@temporalio/common';
import { RUN_AHEAD_FAILURE_TYPE } from '../session/run-ahead';
import { Failure } from '../session/failure-types';

/**
 * Failure types whose message stays readable: refusals of a query's arguments, and a worker's refusal to answer
 * from a run that ran ahead of history (src/workflows/run-guard.ts), which readers retry on. A query is never recorded in
 * history, and the Temporal client does not decode a query's failure (it reports only the message), so an
 * encoded message would read "Encoded failure" to every client. These messages name fields and rules, never a
 * value or a secret.
 */
export const READABLE_FAILURE_TYPES: ReadonlySet<string> = new Set([
  Failure.Session.InvalidQuery,
  RUN_AHEAD_FAILURE_TYPE,
]);

class SessionFailureConverter extends DefaultFailureConverter {
  constructor() {
    super({ encodeCommonAttributes: true });
  }

  override errorToFailure(err: unknown, payloadConverter: PayloadConverter, context?: unknown): ProtoFailure {
    if (err instanceof ApplicationFailure && err.type && READABLE_FAILURE_TYPES.has(err.type)) {
      return this.errorToFailureInner(err, payloadConverter, context as never);
    }
    return super.errorToFailure(err, payloadConverter, context as never);
  }
}

export const failureConverter = new SessionFailureConverter();
