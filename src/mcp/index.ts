// MCP on the tools worker: credentials from the vault, a connection pool, model-facing tool names.
export { McpClientPool, type McpTarget } from './pool';
export { McpCredentials, McpCredentialError, parseCredential } from './credentials';
export { mcpToolName, MCP_PREFIX } from './naming';
export { toMcpFailure } from './mcp-errors';
