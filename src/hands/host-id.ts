// A hands host's id, which names its queue (`hands.<id>`) and labels its sandboxes. `HANDS_HOST_ID=compose` names a
// docker compose replica by its project, service and number: unlike its hostname (the container id), these stay the
// same when compose recreates the container, and each replica of `--scale hands=N` gets one of its own.
import os from 'node:os';
import { HostIdSchema } from '../session/identifiers';
import { dockerFromHost } from '../sandbox/docker';

export const COMPOSE_HOST_ID = 'compose';

/** `<project>-<service>-<number>` of the container this process runs in, read through the Docker socket. */
export async function composeHostId(dockerHost: string | undefined, hostname = os.hostname()): Promise<string> {
  let labels: Record<string, string>;
  try {
    labels = (await dockerFromHost(dockerHost).getContainer(hostname).inspect()).Config.Labels ?? {};
  } catch (err) {
    throw new Error(
      `HANDS_HOST_ID=compose: this process is not in a container the Docker engine knows as ${hostname} (${(err as Error).message.split('\n')[0]})`,
    );
  }
  const project = labels['com.docker.compose.project'];
  const service = labels['com.docker.compose.service'];
  const number = labels['com.docker.compose.container-number'];
  if (!project || !service || !number)
    throw new Error(
      `HANDS_HOST_ID=compose: container ${hostname} was not started by docker compose (no com.docker.compose labels)`,
    );
  return HostIdSchema.parse(`${project}-${service}-${number}`);
}
