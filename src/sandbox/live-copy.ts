// The live preview of a command's output: a second exec into the sandbox (EXEC_LIVE) that copies the output file
// the exec wrapper writes, started only for a command that is still running after LIVE_DELAY_MS.
import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { EXEC_LIVE } from './scripts';

/** How long after its exec starts a command's output begins to stream live: shorter commands are not previewed. */
export const LIVE_DELAY_MS = 250;
/** How long a finished command's live copy may take to deliver its last bytes. */
const LIVE_GRACE_MS = 500;

export interface LiveCopy {
  /** Waits for the copy to end (at most LIVE_GRACE_MS), then cuts it. */
  finish(): Promise<void>;
}

/**
 * Streams the output of the command under `keyEnv` to `onOutput` until the command ends. The sandbox caps what it
 * sends; the host drops anything past that cap too, since the sandbox is hostile.
 */
export function startLiveCopy(
  docker: Docker,
  container: Docker.Container,
  keyEnv: string,
  liveBytes: number,
  onOutput: (chunk: Buffer) => void,
): LiveCopy {
  let stream: NodeJS.ReadWriteStream | undefined;
  let received = 0;
  const done = (async () => {
    const exec = await container.exec({
      Cmd: ['bash', '-c', EXEC_LIVE],
      Env: [keyEnv, `MA_LIVE=${liveBytes}`],
      AttachStdout: true,
      AttachStderr: true,
    });
    stream = await exec.start({ hijack: true, stdin: false });
    const out = new PassThrough();
    out.on('data', (c: Buffer) => {
      received += c.length;
      if (received <= liveBytes + 64 * 1024) onOutput(c);
    });
    docker.modem.demuxStream(stream, out, new PassThrough().resume());
    await new Promise<void>((resolve) => {
      stream!.on('end', resolve);
      stream!.on('close', resolve);
      stream!.on('error', () => resolve());
    });
  })().catch(() => undefined);
  return {
    // The copy ends on its own within moments of the command (tail follows its pid); past LIVE_GRACE_MS it is cut.
    finish: async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, LIVE_GRACE_MS)))]);
      clearTimeout(timer);
      (stream as unknown as { destroy?(): void } | undefined)?.destroy?.();
    },
  };
}
