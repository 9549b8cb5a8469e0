// The approval commands of `agents`: decide a tool call that waits for approval, or answer a client tool call.
import type { Command } from 'commander';
import fs from 'node:fs';
import { loadConfig } from '../config';
import { formatIssues } from '../session/agent';
import { ResolveToolUseSchema, SubmitToolResultSchema } from '../session/contract';
import { resolveToolUse, submitToolResult } from '../session-ops';
import { CliError, connect, err, opError, out, sessionId } from './cli-common';

/** `agents approve` and `agents deny`: the decision on a tool call waiting for approval. */
export function approvalCommands(program: Command): void {
  for (const [name, allow, what] of [
    ['approve', true, 'approve a tool call waiting for approval'],
    ['deny', false, 'deny a tool call waiting for approval; the model gets the reason'],
  ] as const) {
    program
      .command(name)
      .description(what)
      .argument('<id>', 'session id', sessionId)
      .argument('<toolUseId>', 'the tool_use id (see `agents status`)')
      .option('--reason <text>', allow ? 'why (recorded)' : 'why (recorded, and told to the model)')
      .option('--by <name>', 'who decides (recorded; default user)')
      .option('--json', 'print {"seq"} of the approval_resolved event')
      .action(async (id: string, toolUseId: string, opts: { reason?: string; by?: string; json?: boolean }) => {
        const decision = ResolveToolUseSchema.safeParse({
          toolUseId,
          allow,
          ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
          ...(opts.by !== undefined ? { by: opts.by } : {}),
        });
        if (!decision.success) throw new CliError(`invalid ${name}: ${formatIssues(decision.error)}`);
        const client = await connect(loadConfig());
        const r = await opError(() => resolveToolUse(client, id, decision.data));
        if (opts.json) out(JSON.stringify(r));
        else err(`${allow ? 'approved' : 'denied'} ${toolUseId} (event ${r.seq})`);
      });
  }
}

/** `agents submit`: the calling application's result for a client tool call. */
export function submitCommand(program: Command): void {
  program
    .command('submit')
    .description("answer a client tool call with the calling application's result")
    .argument('<id>', 'session id', sessionId)
    .argument('<toolUseId>', 'the tool_use id (see `agents status`)')
    .option('--output <text>', 'the result text')
    .option('--output-file <file>', 'read the result text from a file (- for stdin)')
    .option('--error', 'the tool failed; the output says how')
    .option('--json', 'print {"seq"} of the tool_result event')
    .action(
      async (
        id: string,
        toolUseId: string,
        opts: { output?: string; outputFile?: string; error?: boolean; json?: boolean },
      ) => {
        if ((opts.output === undefined) === (opts.outputFile === undefined))
          throw new CliError('give exactly one of --output and --output-file');
        let output = opts.output;
        if (opts.outputFile !== undefined) {
          try {
            output = fs.readFileSync(opts.outputFile === '-' ? 0 : opts.outputFile, 'utf8');
          } catch (e) {
            throw new CliError(
              `cannot read ${opts.outputFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
            );
          }
        }
        const result = SubmitToolResultSchema.safeParse({ toolUseId, output, isError: opts.error === true });
        if (!result.success) throw new CliError(`invalid submit: ${formatIssues(result.error)}`);
        const client = await connect(loadConfig());
        const r = await opError(() => submitToolResult(client, id, result.data));
        if (opts.json) out(JSON.stringify(r));
        else err(`submitted the result of ${toolUseId} (event ${r.seq})`);
      },
    );
}
