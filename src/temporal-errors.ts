// What the Temporal client's errors mean for a session, decided here once, by class and status code (never by a
// message's text): a run that is not there, and a session whose run has closed.
import { status } from '@grpc/grpc-js';
import {
  ApplicationFailure,
  QueryRejectedError,
  ServiceError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  isGrpcServiceError,
} from '@temporalio/client';
import { Failure } from './session/failure-types';

/**
 * No run to talk to: never started, deleted, past retention, or already completed when a signal, update or
 * terminate reached it. The client turns the server's NOT_FOUND into WorkflowNotFoundError; a raw service call
 * (or the ServiceError wrapping one) still carries the code.
 */
export function isWorkflowNotFound(e: unknown): boolean {
  if (e instanceof WorkflowNotFoundError) return true;
  const grpc = isGrpcServiceError(e)
    ? e
    : e instanceof ServiceError && isGrpcServiceError(e.cause)
      ? e.cause
      : undefined;
  return grpc?.code === status.NOT_FOUND;
}

/**
 * The session takes no more input: its run is gone (above), a query was refused because the run has closed, or an
 * update was refused by the workflow because the session has ended (Failure.Session.Ended).
 */
export function isSessionClosed(e: unknown): boolean {
  if (isWorkflowNotFound(e) || e instanceof QueryRejectedError) return true;
  return (
    e instanceof WorkflowUpdateFailedError &&
    e.cause instanceof ApplicationFailure &&
    e.cause.type === Failure.Session.Ended
  );
}
