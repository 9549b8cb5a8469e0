// HANDS_HOST_ID=compose: a hands replica's id from its compose labels, read through the real Docker engine, so
// `--scale hands=N` gives N hosts whose ids outlive a recreate of their containers.
import { composeHostId } from '../src/hands/host-id';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { dockerFromHost } from '../src/sandbox/docker';

let host: string | undefined;
const made: string[] = [];

beforeAll(async () => {
  host = await resolveDockerHost();
});
afterAll(async () => {
  for (const id of made)
    await dockerFromHost(host)
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
});

async function container(labels: Record<string, string>): Promise<string> {
  const c = await dockerFromHost(host).createContainer({
    Image: sandboxImage(),
    Cmd: ['true'],
    Labels: labels,
    NetworkDisabled: true,
  });
  made.push(c.id);
  return c.id.slice(0, 12);
}

it('names a compose replica <project>-<service>-<number>', async () => {
  const labels = { 'com.docker.compose.project': 'managed-agents', 'com.docker.compose.service': 'hands' };
  const one = await container({ ...labels, 'com.docker.compose.container-number': '1' });
  const two = await container({ ...labels, 'com.docker.compose.container-number': '2' });
  expect(await composeHostId(host, one)).toBe('managed-agents-hands-1');
  expect(await composeHostId(host, two)).toBe('managed-agents-hands-2');
});

it('refuses a container compose did not start, and a process in no container', async () => {
  const plain = await container({});
  await expect(composeHostId(host, plain)).rejects.toThrow(
    `HANDS_HOST_ID=compose: container ${plain} was not started by docker compose`,
  );
  await expect(composeHostId(host, 'no-such-container-here')).rejects.toThrow(
    /^HANDS_HOST_ID=compose: this process is not in a container the Docker engine knows as no-such-container-here/,
  );
});
