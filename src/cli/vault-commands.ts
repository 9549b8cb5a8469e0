// The vault commands of `agents`: store, list and remove secrets, and print the vault's public key.
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { CliError, err, out, secretName } from './cli-common';

/** `agents vault put`, `list`, `rm` and `public-key`. */
export function vaultCommands(program: Command): void {
  const vault = program
    .command('vault')
    .description('manage secrets in a vault; sessions refer to them as vault:<name>');
  /** Runs `fn` on the vault this configuration names (PostgreSQL when DATABASE_URL is set), then closes it. */
  const withVault = async <T>(fn: (v: import('../vault').SecretVault) => Promise<T>): Promise<T> => {
    const config = loadConfig();
    const { secretVault } = await import('../vault/open');
    const { loadVaultKey } = await import('../key-files');
    const key = loadVaultKey(config);
    if (!config.DATABASE_URL) return fn(secretVault(config.dataDir, key));
    const { openDb } = await import('../storage/db');
    const db = await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir });
    try {
      return await fn(secretVault(config.dataDir, key, db));
    } finally {
      await db.close();
    }
  };
  vault
    .command('put')
    .description('store a secret read from stdin (never from the command line); the value is never printed')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault (one per user or tenant)', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout (never the value)')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (process.stdin.isTTY) err('reading the secret from stdin; end with Ctrl-D');
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const value = Buffer.concat(chunks)
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (value.length === 0) throw new CliError('no secret on stdin');
      await withVault((v) => v.put(opts.vault, name, value));
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`stored ${name} in vault ${opts.vault}; refer to it as vault:${name}`);
    });
  vault
    .command('list')
    .description('list secret names (never values)')
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { vault: string; json?: boolean }) => {
      for (const e of await withVault((v) => v.list(opts.vault)))
        out(opts.json ? JSON.stringify(e) : `${e.name}\t${e.updatedAt}`);
    });
  vault
    .command('rm')
    .description('remove a secret')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (!(await withVault((v) => v.rm(opts.vault, name))))
        throw new CliError(`no secret ${name} in vault ${opts.vault}`);
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`removed ${name} from vault ${opts.vault}`);
    });

  vault
    .command('public-key')
    .description(
      "print the public half of VAULT_KEY, which the API seals credentials to (set it as the API's VAULT_PUBLIC_KEY)",
    )
    .option('--json', 'print {"publicKey"} on stdout')
    .action(async (opts: { json?: boolean }) => {
      const { loadVaultKey } = await import('../key-files');
      const { vaultPublicKey } = await import('../vault/sealed');
      const key = await vaultPublicKey(loadVaultKey(loadConfig()));
      out(opts.json ? JSON.stringify({ publicKey: key }) : key);
    });
}
