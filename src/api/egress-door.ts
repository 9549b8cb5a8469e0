// The egress gate at the API's door: a URL a tenant gives (an MCP server, a token endpoint, a repository) that the
// workers would refuse to connect to is refused here first, with a 400 naming the field and the rule. A name that
// does not resolve from here is let through (it may resolve where the workers run) and meets the gate at run time.
import { EgressGate, makePolicy } from '../egress';
import type { ApiDeps } from './route-context';
import { badRequest } from './api-error';

/** Names reserved for documentation and testing (RFC 2606, RFC 6761): never looked up at the door. */
const RESERVED_NAME = /(^|\.)(example|invalid|test|example\.(com|net|org))\.?$/i;

let strict: EgressGate | undefined;

/** The deps' gate, or one that opens nothing. */
const gateOf = (deps: ApiDeps) => deps.egress ?? (strict ??= new EgressGate(makePolicy(undefined)));

/** Throws a 400 when the gate would refuse `url`; `field` names where it was given, e.g. `mcp_servers.0.url`. */
export async function refuseAtTheDoor(deps: ApiDeps, field: string, url: string): Promise<void> {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return; // the body's schema has already said what is wrong with it
  }
  const gate = gateOf(deps);
  const refused = RESERVED_NAME.test(host) ? gate.literalRefusal(url) : await gate.refusal(url);
  if (refused && refused.rule !== 'unresolvable') throw badRequest(`${field}: ${refused.message}`);
}
