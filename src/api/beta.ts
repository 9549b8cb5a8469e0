// The beta the API serves: every /v1 request names it in its `anthropic-beta` header, as the SDK does.
export const MANAGED_AGENTS_BETA = 'managed-agents-2026-04-01';
