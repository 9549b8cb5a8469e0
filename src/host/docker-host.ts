// The Docker engine and sandbox image a worker uses at run time: `$DOCKER_HOST`, the system socket or the
// project's own, whichever answers; the image tag from `$SANDBOX_IMAGE`.
import http from 'node:http';
import { run } from './run';

export const SANDBOX_IMAGE_DEFAULT = 'managed-agents/sandbox:latest';
export const SYSTEM_DOCKER_HOST = 'unix:///var/run/docker.sock';
export const PROJECT_DOCKER_HOST = 'unix:///run/managed-agents/docker.sock';

/** Environment for the docker CLI against `host`. */
export function dockerEnv(host: string): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: host, DOCKER_CLI_HINTS: 'false' };
}

function pingHttp(target: http.RequestOptions, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request(
      { ...target, path: '/_ping', method: 'GET', agent: false, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'OK'));
        res.on('error', () => resolve(false));
      },
    );
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Whether a Docker engine answers GET /_ping at `host` (a DOCKER_HOST value). */
export async function pingDocker(host: string, timeoutMs = 2_000): Promise<boolean> {
  if (host.startsWith('unix://')) return pingHttp({ socketPath: host.slice('unix://'.length) }, timeoutMs);
  if (host.startsWith('tcp://') && !process.env.DOCKER_TLS_VERIFY) {
    const url = new URL(host.replace(/^tcp:/, 'http:'));
    return pingHttp({ host: url.hostname, port: Number(url.port || 2375) }, timeoutMs);
  }
  // TLS, ssh:// and other transports: the CLI knows how to speak them.
  const result = await run('docker', ['version', '--format', '{{.Server.Version}}'], { env: dockerEnv(host) }).catch(
    () => undefined,
  );
  return result?.code === 0;
}

/** The engine to use: `$DOCKER_HOST` if set, else the system socket, else the project's own, if one answers. */
export async function resolveDockerHost(): Promise<string | undefined> {
  if (process.env.DOCKER_HOST) return process.env.DOCKER_HOST;
  for (const host of [SYSTEM_DOCKER_HOST, PROJECT_DOCKER_HOST]) {
    if (await pingDocker(host)) return host;
  }
  return undefined;
}

/** The sandbox image tag: `$SANDBOX_IMAGE`, or the default. */
export function sandboxImage(): string {
  return process.env.SANDBOX_IMAGE || SANDBOX_IMAGE_DEFAULT;
}
