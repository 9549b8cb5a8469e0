// An MCP server over stdio (the SDK's McpServer), run with node by the tools worker. It reads its access
// token from MCP_ACCESS_TOKEN and accepts only the one whose SHA-256 is EXPECTED_TOKEN_SHA256.
import crypto from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const token = process.env.MCP_ACCESS_TOKEN ?? '';
const authorized = crypto.createHash('sha256').update(token).digest('hex') === process.env.EXPECTED_TOKEN_SHA256;
// A server that logs its token: the tools worker must keep stderr out of logs and results.
process.stderr.write(`starting with token ${token}\n`);

/** Tells one process from the next: in its jail's PID namespace, a restarted server may get the same pid. */
const instance = crypto.randomBytes(6).toString('hex');
const server = new McpServer({ name: 'local', version: '1.0.0' });
server.registerTool('whoami', { description: 'Says whether the token was accepted.' }, async () =>
  authorized
    ? { content: [{ type: 'text', text: `authorized with ${token} (pid ${process.pid}, instance ${instance})` }] }
    : { content: [{ type: 'text', text: 'unauthorized' }], isError: true },
);
server.registerTool(
  'add',
  { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }),
);

void server.connect(new StdioServerTransport());
