// The local Docker setup: a real engine, the sandbox image running locked down as a non-root user, and idempotent reuse.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { findDebianMirror } from '../src/infra/debian-mirror';
import { dockerEnv, resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { ensureDockerEngine } from '../src/infra/dockerd';
import { ensureSandboxImage, imageId, type SandboxImage } from '../src/infra/sandbox-image';

const run = promisify(execFile);
const logs: string[] = [];
const log = (m: string) => logs.push(m);

let host: string;
let first: SandboxImage;

// On a fresh machine this installs docker.io and builds the image with mmdebstrap, which takes a few minutes.
beforeAll(async () => {
  host = await ensureDockerEngine(log);
  first = await ensureSandboxImage(host, log);
}, 15 * 60_000);

const docker = (args: string[]) => run('docker', args, { env: dockerEnv(host), maxBuffer: 16 * 1024 * 1024 });

test('resolveDockerHost finds the engine that setup ensured', async () => {
  expect(await resolveDockerHost()).toBe(host);
});

test('the sandbox image exists with a non-root user and /workspace as its working directory', async () => {
  const { stdout } = await docker(['image', 'inspect', '--format', '{{json .Config}}', sandboxImage()]);
  const config = JSON.parse(stdout) as { User: string; WorkingDir: string; Env: string[] | null };
  expect(config.User).toBe('1000');
  expect(config.WorkingDir).toBe('/workspace');
  expect(config.Env).toContain('HOME=/home/agent');
});

test('a locked-down container runs as agent (uid 1000) with git and python', async () => {
  const script = 'id -u; whoami; stat -c %u /workspace; git --version; python3 --version';
  const args = [
    'run',
    '--rm',
    '--network',
    'none',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--read-only',
    '--tmpfs',
    '/tmp',
    '--user',
    '1000',
  ];
  const { stdout } = await docker([...args, sandboxImage(), 'sh', '-c', script]);
  const [uid, user, workspaceOwner, git, python] = stdout.trim().split('\n');
  expect(uid).toBe('1000');
  expect(user).toBe('agent');
  expect(workspaceOwner).toBe('1000');
  expect(git).toMatch(/^git version \d+\./);
  expect(python).toMatch(/^Python 3\.\d+/);
});

test('a second ensureSandboxImage reuses the image', async () => {
  const second = await ensureSandboxImage(host, log);
  expect(second.action).toBe('reused');
  expect(second.id).toBe(first.id);
  expect(await imageId(host, sandboxImage())).toBe(first.id);
});

describe('findDebianMirror', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apt-sources-'));
    fs.mkdirSync(path.join(dir, 'sources.list.d'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => fs.writeFileSync(path.join(dir, name), text);

  test('reads the bookworm mirror from deb822 sources, skipping security, disabled and other files', () => {
    write(
      'sources.list.d/other.sources.disabled',
      'Types: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\nComponents: main\n',
    );
    write(
      'sources.list.d/debian.sources',
      [
        'Types: deb',
        'URIs: http://security.example/debian-security',
        'Suites: bookworm-security',
        'Components: main',
        '',
        'Types: deb',
        'URIs: http://off.example/debian',
        'Suites: bookworm',
        'Components: main',
        'Enabled: no',
        '',
        '# a comment',
        'Types: deb-src deb',
        'URIs: http://mirror.example/debian/',
        'Suites: bookworm bookworm-updates',
        'Components: main contrib',
        '',
      ].join('\n'),
    );
    expect(findDebianMirror(dir, 'bookworm', undefined)).toBe('http://mirror.example/debian');
  });

  test('reads one-line sources with options', () => {
    write(
      'sources.list',
      '# deb http://commented.example/debian bookworm main\ndeb [signed-by=/k.gpg arch=amd64] https://list.example/debian bookworm main\n',
    );
    expect(findDebianMirror(dir, 'bookworm', undefined)).toBe('https://list.example/debian');
  });

  test("falls back to the mirror of the host's own release, and fails clearly when there is none", () => {
    write('sources.list', 'deb http://trixie.example/debian trixie main\n');
    expect(findDebianMirror(dir, 'bookworm', 'trixie')).toBe('http://trixie.example/debian');
    expect(() => findDebianMirror(dir, 'bookworm', undefined)).toThrow(/no apt source for Debian bookworm/);
  });
});
