// The betas the API serves. Each /v1 route family names the beta the SDK sends for it in `anthropic-beta`; the
// SDK's files and skills methods send none of their own, so those routes take a request with no beta header.
export const MANAGED_AGENTS_BETA = 'managed-agents-2026-04-01';
export const AGENT_MEMORY_BETA = 'agent-memory-2026-07-22';

/** The beta a request to `url` must name, or undefined when the route takes any (or none). */
export function betaRequiredFor(url: string): string | undefined {
  if (/^\/v1\/(files|skills)(\/|\?|$)/.test(url)) return undefined;
  if (/^\/v1\/memory_stores(\/|\?|$)/.test(url)) return AGENT_MEMORY_BETA;
  return MANAGED_AGENTS_BETA;
}
