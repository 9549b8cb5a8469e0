#!/usr/bin/env node
// The `agents` command line: start and drive sessions, read and follow their logs, run workers and the dev stack.
// The commands are defined in src/cli/; this file puts them together into one program and runs it.
import { Command } from 'commander';
import { colorEnabled, styles } from './host/term';
import { addExamples, PROGRAM_HELP } from './cli/help-examples';
import { CliError, err } from './cli/cli-common';
import { approvalCommands, submitCommand } from './cli/approval-commands';
import { apiKeysCommands } from './cli/api-key-commands';
import { environmentKeysCommands } from './cli/environment-key-commands';
import { auditCommand } from './cli/audit-commands';
import { filesCommands, handoffCommand } from './cli/sandbox-commands';
import {
  apiCommand,
  codecServerCommand,
  devCommand,
  doctorCommand,
  modelServerCommand,
  workerCommand,
} from './cli/service-commands';
import {
  eventsCommand,
  forkCommand,
  listCommand,
  loadAgent,
  sendCommand,
  signalCommands,
  startCommand,
  statusCommand,
  wakeCommand,
  watchCommand,
} from './cli/session-commands';
import { vaultCommands } from './cli/vault-commands';
import { memoryCommands } from './cli/memory-commands';
import { deploymentCommands } from './cli/deployment-commands';
import { webhookCommands } from './cli/webhook-commands';

export { CliError, loadAgent };

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('agents')
    .description('Run long-lived AI agent sessions durably on Temporal')
    // A parse error is one line, like every other refusal: commander puts its suggestion on a line of its own.
    .configureOutput({
      writeErr: (s) => process.stderr.write(s),
      outputError: (s, write) => write(`${s.trimEnd().replace(/\s*\n\s*/g, ' ')}\n`),
    });

  // In the order `agents --help` lists them.
  startCommand(program);
  sendCommand(program);
  eventsCommand(program);
  watchCommand(program);
  statusCommand(program);
  approvalCommands(program);
  submitCommand(program);
  listCommand(program);
  wakeCommand(program);
  forkCommand(program);
  signalCommands(program);
  workerCommand(program);
  doctorCommand(program);
  filesCommands(program);
  handoffCommand(program);
  vaultCommands(program);
  apiCommand(program);
  apiKeysCommands(program);
  environmentKeysCommands(program);
  memoryCommands(program);
  deploymentCommands(program);
  webhookCommands(program);
  auditCommand(program);
  devCommand(program);
  modelServerCommand(program);
  codecServerCommand(program);

  addExamples(program);
  program.addHelpText('after', PROGRAM_HELP);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    const error = e as Error & { code?: string; exitCode?: number };
    if (error.code?.startsWith('commander.')) return error.exitCode ?? 1;
    err(`${styles(colorEnabled(process.stderr)).red('error:')} ${error.message.split('\n')[0]}`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv).then(
    (code) => process.exit(code),
    (e) => {
      err(`error: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}
