// Hands hosts as processes of their own (`agents worker --role hands`) reading the API's PostgreSQL database, for
// tests that lose a host and go on on another; and a listing of a workspace to compare byte for byte.
import { resolveDockerHost } from '../../src/host/docker-host';
import { spawnWorker, type ChildWorker } from './child-worker';
import { TEST_CODEC_KEY } from './test-keys';

/** Every path of the workspace with its type, mode, and content hash or link target, sorted. */
export const WORKSPACE_LISTING =
  'find . -mindepth 1 \\( -type f -printf "%p f %m " -exec sh -c \'sha256sum < "$1"\' _ {} \\; \\) -o \\( -type l -printf "%p l %l\\n" \\) | sort';

/** Starts hands host `hostId` on the Temporal server at `address`; it is added to `children` for the test to kill. */
export async function spawnHandsHost(
  opts: { address: string; databaseUrl: string; hostId: string },
  children: ChildWorker[],
): Promise<ChildWorker> {
  const w = await spawnWorker(
    {
      TEMPORAL_ADDRESS: opts.address,
      HANDS_HOST_ID: opts.hostId,
      DOCKER_HOST: (await resolveDockerHost())!,
      DATABASE_URL: opts.databaseUrl,
      CODEC_KEY: TEST_CODEC_KEY,
    },
    'hands',
  );
  children.push(w);
  return w;
}
