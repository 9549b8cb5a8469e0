// Registers the session search attributes on the namespace, idempotently, so any fresh server can index them.
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SESSION_SEARCH_ATTRIBUTES } from '../session/search-attributes';

const ALREADY_EXISTS = 6;

/**
 * Adds whichever of AgentSessionState, AgentName and AgentModel the namespace lacks. Returns the names it added.
 * Where the operator service refuses (e.g. Temporal Cloud, where attributes are added with `tcld`), it throws a
 * message that says so; the caller decides whether that is fatal.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SESSION_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (listed.customAttributes ?? {})));
  if (missing.length === 0) return [];
  const searchAttributes = Object.fromEntries(
    missing.map((k) => [k.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
  );
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    // Another worker registered them first.
    if ((err as { code?: number }).code !== ALREADY_EXISTS) {
      throw new Error(
        `could not register search attributes ${missing.map((k) => k.name).join(', ')} on namespace ${namespace}: ${(err as Error).message.split('\n')[0]} (add them as Keyword attributes with \`temporal operator search-attribute create\` or your cloud console)`,
      );
    }
  }
  return missing.map((k) => k.name);
}
