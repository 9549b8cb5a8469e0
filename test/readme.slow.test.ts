// The README's get-going commands on a clean clone (`npm install`, `npm run setup`, `npm start`) set everything up and run the demo.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, freePort, removeHostSandboxes } from './helpers/env';

const HOST = `readme-${process.pid}`;

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** The commands of the README's "Get going" block, in order, without their comments. */
function gettingStarted(readme: string): string[][] {
  const section = readme.split(/^## Get going$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter(Boolean)
    .map((l) => l.split(/\s+/));
}

it("runs the README's get-going commands on a clean clone: a demo session with a tool call and a Web UI link", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-clone-'));
  try {
    execFileSync('git', ['clone', '--quiet', ROOT, dir]);
    const port = await freePort();
    // A hands host of its own: another stack's reaper would take its sandboxes for orphans.
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      ANTHROPIC_API_KEY: '',
      ANTHROPIC_BASE_URL: '',
      HANDS_HOST_ID: HOST,
    };
    const commands = gettingStarted(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'));
    expect(commands.map((c) => c.join(' '))).toEqual(['npm install', 'npm run setup', 'npm start']);
    let start = { code: null as number | null, out: '' };
    for (const [cmd, ...args] of commands) {
      start = await run(cmd, args[0] === 'install' ? [...args, '--no-audit', '--no-fund'] : args, dir, env);
      if (start.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${start.code}: ${start.out}`);
    }
    expect(start.out).toMatch(/#\d+ tool_use bash/);
    expect(start.out).toMatch(/#\d+ sandbox_provisioned .*"name":"main"/);
    expect(start.out).toMatch(/#\d+ tool_result: hello from agent in \/workspace/);
    expect(start.out).toMatch(/#\d+ tool_use session_events/);
    expect(start.out).toMatch(/#\d+ tool_result: \{"events":/);
    expect(start.out).toMatch(/#\d+ session_ended: demo finished/);
    expect(start.out).toMatch(new RegExp(`Web UI: http://localhost:${port + 1000}/namespaces/default/workflows/demo-`));
  } finally {
    await removeHostSandboxes(HOST);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 900_000);
