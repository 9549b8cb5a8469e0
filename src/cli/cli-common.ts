// What every `agents` command shares: its error type, output, argument parsers, and the connection to Temporal
// and the session log.
import { InvalidArgumentError } from 'commander';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../config';
import { clientConnectionOptions } from '../temporal-connection';
import { createDataConverter } from '../codec';
import { loadCodecKey } from '../key-files';
import { formatIssues } from '../session/agent';
import { UserMessageSchema, type UserMessage } from '../session/contract';
import { sessionArchive, type SessionArchive } from '../archive';
import { ArchivedSessionLog, LiveSessionLog, type SessionLog } from '../log/session-log';
import { clientInterceptors } from '../log/query-retry';
import { SessionOpError } from '../session-ops';
import { PlatformError } from '../session/platform-error';
import { isWorkflowNotFound } from '../temporal-errors';

export class CliError extends PlatformError {}

const SessionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, 'session ids are 1-200 letters, digits, dot, dash or underscore');

export function sessionId(raw: string): string {
  const r = SessionIdSchema.safeParse(raw);
  if (!r.success) throw new InvalidArgumentError(r.error.issues[0].message);
  return r.data;
}

export function secretName(raw: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(raw))
    throw new InvalidArgumentError('names are 1-100 letters, digits, dot, dash or underscore');
  return raw;
}

export function nonNegativeInt(raw: string): number {
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new InvalidArgumentError(`must be a non-negative integer up to ${Number.MAX_SAFE_INTEGER}`);
  return Number(raw);
}

export function positiveInt(raw: string): number {
  if (!/^[1-9]\d*$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new InvalidArgumentError(`must be a positive integer up to ${Number.MAX_SAFE_INTEGER}`);
  return Number(raw);
}

export const err = (msg: string) => process.stderr.write(`${msg}\n`);
export const out = (msg: string) => process.stdout.write(`${msg}\n`);

export async function connect(config: Config): Promise<Client> {
  // The CLI decodes what workers encrypted, so events, status and update results read as plain JSON.
  const dataConverter = converterOf(config);
  try {
    const connection = await Connection.connect({ ...clientConnectionOptions(config), connectTimeout: '5s' });
    return new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      dataConverter,
      interceptors: clientInterceptors,
    });
  } catch (e) {
    throw new CliError(`cannot reach Temporal at ${config.TEMPORAL_ADDRESS}: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** A user message from the command line, or a one-line error naming what is wrong with it. */
export function parseMessage(text: string, messageId?: string): UserMessage {
  const m = UserMessageSchema.safeParse({ text, ...(messageId ? { messageId } : {}) });
  if (!m.success) throw new CliError(`invalid message: ${formatIssues(m.error)}`);
  return m.data;
}

function converterOf(config: Config) {
  return createDataConverter(loadCodecKey(config));
}

const archives = new WeakMap<Config, SessionArchive>();

/** The session archive and a log over it and the live runs, as the workers see them (one archive per config). */
export function sessionLog(client: Client, config: Config): { archive: SessionArchive; log: SessionLog } {
  let archive = archives.get(config);
  if (!archive) archives.set(config, (archive = sessionArchive(config, converterOf(config))));
  return { archive, log: new ArchivedSessionLog(archive, new LiveSessionLog(client)) };
}

export async function withSession<T>(id: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isWorkflowNotFound(e)) {
      throw new CliError(`unknown session ${id}`);
    }
    throw e;
  }
}

/** Runs an update and turns its failure into a one-line CLI error. */
export async function update<Ret, Arg>(
  client: Client,
  id: string,
  def: UpdateDefinition<Ret, [Arg]>,
  arg: Arg,
): Promise<Ret> {
  try {
    return await client.workflow.getHandle(id).executeUpdate(def, { args: [arg] });
  } catch (e) {
    if (e instanceof WorkflowUpdateFailedError) throw new CliError(e.cause?.message ?? e.message);
    throw e;
  }
}

export async function opError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof SessionOpError) throw new CliError(e.message);
    throw e;
  }
}

export function uiLink(config: Config, id: string): string {
  return `http://localhost:8233/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(id)}`;
}
