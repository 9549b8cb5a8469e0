// The README's SDK quick start, as printed there, against the API that the dev stack (`agents dev`, the stack
// `npm start` runs) serves: the key the stack keeps, then the snippet with plain node.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectOneLineError, runAgents, runNode } from './helpers/cli';
import { ROOT, freePort, removeHostSandboxes } from './helpers/env';

const HOST = `quickstart-${process.pid}`;

/** The first ```js block after the "Drive it with the SDK" heading. */
function quickstart(readme: string): string {
  const section = readme.slice(readme.indexOf('## Drive it with the SDK'));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('no js block in the README quick start');
  return m[1];
}

let dev: ChildProcess | undefined;
let dataDir: string;
let scriptDir: string;
afterAll(async () => {
  if (dev && dev.exitCode === null) {
    const exited = new Promise((r) => dev!.once('exit', r));
    dev.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (dev.exitCode === null) dev.kill('SIGKILL');
  }
  await removeHostSandboxes(HOST);
  for (const d of [dataDir, scriptDir]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

it('runs the README quick start: the SDK drives a session on the dev stack by baseURL alone', async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-quickstart-'));
  const port = await freePort();
  // A hands host of its own: another stack's reaper would take its sandboxes for orphans.
  const env = {
    DATA_DIR: dataDir,
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    API_LISTEN: '127.0.0.1:0',
    ANTHROPIC_API_KEY: '',
    ANTHROPIC_BASE_URL: '',
    HANDS_HOST_ID: HOST,
  };
  dev = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'dev', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  dev.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const up = await new Promise<{ apiUrl: string | null }>((resolve, reject) => {
    let out = '';
    dev!.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    dev!.once('exit', (code) => reject(new Error(`agents dev exited with ${code}: ${stderr}`)));
  });
  expect(up.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

  // The stack keeps a key for workspace default in DATA_DIR; the command line cannot open the embedded database
  // the running API holds, and says so.
  const key = fs.readFileSync(path.join(dataDir, 'api-key'), 'utf8').trim();
  expect((fs.statSync(path.join(dataDir, 'api-key')).mode & 0o777).toString(8)).toBe('600');
  const made = await runAgents(`127.0.0.1:${port}`, ['api-keys', 'create', '--workspace', 'default', '--json'], env);
  expectOneLineError(made, /the embedded database .* is open in process \d+/);

  // Beside the repository's node_modules, so the snippet's import of the SDK resolves as in a project using it.
  fs.mkdirSync(path.join(ROOT, 'test/artifacts'), { recursive: true });
  scriptDir = fs.mkdtempSync(path.join(ROOT, 'test/artifacts', 'quickstart-'));
  const script = path.join(scriptDir, 'quickstart.mjs');
  fs.writeFileSync(script, quickstart(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')));
  const run = await runNode(script, [], { AGENTS_API_URL: up.apiUrl!, AGENTS_API_KEY: key });
  expect(run).toMatchObject({ code: 0, stdout: 'You said: Hello!\n' });
}, 180_000);
