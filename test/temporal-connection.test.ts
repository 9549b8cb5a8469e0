// A Temporal connection closed while one of its calls waits to be retried: the call ends with CANCELLED, and the
// process does not die of the retry's timer firing on a closed channel.
import net from 'node:net';
import { InterceptingCall, ListenerBuilder, RequesterBuilder, status, type Interceptor } from '@grpc/grpc-js';
import { Connection } from '@temporalio/client';
import { grpcInterceptors } from '../src/temporal-connection';

/** A loopback port nothing listens on: every attempt is refused, and the SDK schedules a retry. */
async function refusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

it('ends a call whose retry comes due after the connection closed with CANCELLED', async () => {
  let failedAttempts = 0;
  let attemptFailed: () => void = () => undefined;
  const firstFailure = new Promise<void>((r) => (attemptFailed = r));
  // Below the guard: sees each attempt the channel made end.
  const attempts: Interceptor = (options, nextCall) =>
    new InterceptingCall(
      nextCall(options),
      new RequesterBuilder()
        .withStart((metadata, _listener, next) => {
          const counting = new ListenerBuilder()
            .withOnReceiveStatus((s, nextStatus) => {
              failedAttempts++;
              attemptFailed();
              nextStatus(s);
            })
            .build();
          next(metadata, counting);
        })
        .build(),
    );
  const connection = Connection.lazy({
    address: `127.0.0.1:${await refusedPort()}`,
    interceptors: [...grpcInterceptors(), attempts],
  });
  const call = connection.workflowService.getSystemInfo({}).then(
    () => ({ code: -1, message: 'answered' }),
    (err: { code: number; message: string }) => ({ code: err.code, message: err.message }),
  );
  await firstFailure;
  // The first attempt was refused and its retry is on a timer: close now.
  await connection.close();
  const ended = await call;
  expect(failedAttempts).toBe(1);
  expect(ended.code).toBe(status.CANCELLED);
  expect(ended.message).toMatch(/connection was closed/);
});

it('ends a call made after the connection closed with CANCELLED', async () => {
  const connection = Connection.lazy({
    address: `127.0.0.1:${await refusedPort()}`,
    interceptors: grpcInterceptors(),
  });
  await connection.close();
  // The first attempt never reaches the channel: the retry interceptor above the guard sees no reply at all.
  const ended = await connection.workflowService.getSystemInfo({}).then(
    () => ({ code: -1, message: 'answered' }),
    (err: { code: number; message: string }) => ({ code: err.code, message: err.message }),
  );
  expect(ended.code).toBe(status.CANCELLED);
  expect(ended.message).toMatch(/connection was closed/);
});
