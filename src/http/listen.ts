// Starting and stopping the project's small HTTP servers (model, codec, stream endpoints).
import type http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on host:port (0 picks a free port) and returns the port bound. */
export async function listen(server: http.Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** Closes the server and every connection to it, open streams included. */
export async function closeServer(server: http.Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An http URL for host:port, with an IPv6 host in brackets. */
export function httpUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
