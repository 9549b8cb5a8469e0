// `agents files put|get`: copying files into and out of a session's sandbox, provisioning it if needed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { endSignal, statusQuery } from '../src/session/contract';
import { expectOneLineError, runAgents } from './helpers/cli';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash } from './helpers/hands';

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: `test-files-${process.pid}` });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-files-'));
});
afterAll(async () => {
  await h?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const agents = (args: string[]) => runAgents(h.env.address, args);

describe('agents files', () => {
  it('round-trips a file, provisioning the sandbox lazily, and the model sees it', async () => {
    const handle = await startSession(h);
    const id = handle.workflowId;
    const local = path.join(dir, 'in.bin');
    const content = Buffer.concat([Buffer.from('binary \u0000 data\n'), Buffer.alloc(300_000, 7)]);
    fs.writeFileSync(local, content);
    const put = await agents(['files', 'put', id, local, 'data/in.bin']);
    expect(put.stderr).toMatch(/wrote 300014 bytes to \/workspace\/data\/in.bin/);
    expect(put.code).toBe(0);
    expect((await allEvents(handle)).filter((e) => e.type === 'sandbox_provisioned')).toHaveLength(1);
    expect((await handle.query(statusQuery)).sandboxes).toHaveLength(1);
    expect((await bash(h, handle, 'wc -c < data/in.bin; cp data/in.bin data/out.bin')).output).toBe('300014\n[exit 0]');
    const out = path.join(dir, 'out.bin');
    const get = await agents(['files', 'get', id, '/workspace/data/out.bin', out]);
    expect(get.code).toBe(0);
    expect(fs.readFileSync(out).equals(content)).toBe(true);
    await handle.signal(endSignal, {});
    await handle.result();
  });

  it('rejects path escapes, unknown sandboxes, missing files and files over the size limit with one-line errors', async () => {
    const handle = await startSession(h);
    const id = handle.workflowId;
    const local = path.join(dir, 'small.txt');
    fs.writeFileSync(local, 'hi');
    expectOneLineError(await agents(['files', 'put', id, local, '../etc/passwd']), /outside the workspace/);
    expectOneLineError(await agents(['files', 'put', id, local, '/etc/passwd']), /outside the workspace/);
    expectOneLineError(await agents(['files', 'put', id, local, 'a/../../x']), /outside the workspace/);
    expectOneLineError(
      await agents(['files', 'get', id, '/workspace/../root', path.join(dir, 'x')]),
      /outside the workspace/,
    );
    expectOneLineError(await agents(['files', 'put', id, local, 'x', '--sandbox', 'nope']), /no sandbox named nope/);
    expectOneLineError(await agents(['files', 'put', id, path.join(dir, 'missing'), 'x']), /cannot read .*ENOENT/);
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(1024 * 1024 + 1));
    expectOneLineError(await agents(['files', 'put', id, big, 'big.bin']), /1048577 bytes; the limit is 1048576/);
    // None of these provisioned anything.
    expect((await allEvents(handle)).filter((e) => e.type === 'sandbox_provisioned')).toHaveLength(0);
    expectOneLineError(await agents(['files', 'get', id, 'nothing-here', path.join(dir, 'y')]), /no such file/);
    await bash(h, handle, 'head -c 1048577 /dev/zero > big.bin');
    expectOneLineError(
      await agents(['files', 'get', id, 'big.bin', path.join(dir, 'z')]),
      /1048577 bytes; the limit is 1048576/,
    );
    await handle.signal(endSignal, {});
    await handle.result();
  });
});
