// Maps MCP client, transport and credential errors to ApplicationFailure in one place, with secrets redacted.
import { ApplicationFailure } from '@temporalio/common';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { redact } from '../vault';
import { McpCredentialError } from './credentials';
import { JailError } from './jail';
import { EgressRefusedError } from '../egress';
import { Failure } from '../session/failure-types';

export type McpErrorType = (typeof Failure.Mcp)[keyof typeof Failure.Mcp];

function classify(err: unknown, op: 'list' | 'call'): { type: McpErrorType; permanent: boolean } {
  if (err instanceof JailError || err instanceof EgressRefusedError)
    return { type: Failure.Mcp.Unavailable, permanent: true };
  if (err instanceof McpCredentialError)
    return err.permanent
      ? { type: Failure.Mcp.Credential, permanent: true }
      : { type: Failure.Mcp.Unavailable, permanent: false };
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout)
    return { type: Failure.Mcp.Timeout, permanent: op === 'call' };
  const code = (err as { code?: unknown })?.code;
  if (err instanceof StreamableHTTPError || typeof code === 'number') {
    if (code === 401 || code === 403) return { type: Failure.Mcp.Unauthorized, permanent: true };
    if (typeof code === 'number' && code >= 400 && code < 500 && code !== 404 && code !== 408 && code !== 429)
      return { type: Failure.Mcp.Rejected, permanent: true };
  }
  // A stdio command that does not exist will not appear on retry.
  if (code === 'ENOENT' || code === 'EACCES') return { type: Failure.Mcp.Unavailable, permanent: true };
  return { type: Failure.Mcp.Unavailable, permanent: false };
}

/** Whether trying again could help. */
export function isPermanent(err: unknown, op: 'list' | 'call'): boolean {
  return classify(err, op).permanent;
}

/** A readable one-line reason, without any of `secrets`. */
export function mcpErrorMessage(err: unknown, server: string, secrets: Iterable<string>): string {
  const raw = err instanceof Error ? err.message : String(err);
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.code ? ` (${cause.code})` : '';
  const code = (err as { code?: unknown })?.code;
  const hint = code === 401 || code === 403 ? `: the server refused the credential (HTTP ${code})` : '';
  // Redact the whole text before cutting it: a cut first could leave most of a token unrecognised.
  return redact(`MCP server ${server}${hint}: ${raw}${detail}`, [...secrets])
    .replace(/\s+/g, ' ')
    .slice(0, 1000);
}

export function toMcpFailure(
  err: unknown,
  server: string,
  secrets: Iterable<string>,
  op: 'list' | 'call',
): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const { type, permanent } = classify(err, op);
  // No cause: the original error may hold a request with the token in it.
  return ApplicationFailure.create({ message: mcpErrorMessage(err, server, secrets), type, nonRetryable: permanent });
}
