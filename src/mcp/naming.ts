// Model-facing names for MCP tools: mcp__<server>__<tool>, within the Messages API's ^[a-zA-Z0-9_-]{1,128}$.
export const MCP_PREFIX = 'mcp__';
const MAX_NAME = 128;

/** FNV-1a, enough to tell apart names that only differ past the cut. */
function shortHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36).padStart(7, '0');
}

/**
 * The name the model sees for `tool` on `server`. MCP tool names may hold characters the API refuses (dots,
 * slashes) or run long; those are replaced or cut, and a hash of the original keeps the result unique in `taken`.
 */
export function mcpToolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const prefix = `${MCP_PREFIX}${server}__`;
  const clean = tool.replace(/[^a-zA-Z0-9_-]/g, '_');
  const plain = `${prefix}${clean}`;
  if (clean === tool && plain.length <= MAX_NAME && !taken.has(plain)) return plain;
  for (let salt = 0; ; salt++) {
    const suffix = `_${shortHash(salt === 0 ? tool : `${tool}\0${salt}`)}`;
    const name = `${prefix}${clean.slice(0, Math.max(0, MAX_NAME - prefix.length - suffix.length))}${suffix}`;
    if (!taken.has(name)) return name;
  }
}
