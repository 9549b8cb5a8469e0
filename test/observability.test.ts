// Observability: after a `docker kill` of a session's sandbox mid-command, the worker's JSON log and
// `agents status` tell the infrastructure error apart from a tool error; tracing exports spans over OTLP/HTTP.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type Docker from 'dockerode';
import { resolveDockerHost } from '../src/host/docker-host';
import { endSignal } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { runAgents } from './helpers/cli';
import { removeHostSandboxes, startHarness, startSession, uniqueId, type Harness } from './helpers/env';
import { bash, docker, sessionContainers } from './helpers/hands';

/** A loopback OTLP/HTTP receiver: collects the names of the spans POSTed to /v1/traces as JSON. */
class OtlpReceiver {
  readonly spans: { name: string; service: string }[] = [];
  private server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const data = JSON.parse(body) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue?: string } }[] };
            scopeSpans: { spans: { name: string }[] }[];
          }[];
        };
        for (const rs of data.resourceSpans ?? []) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) this.spans.push({ name: s.name, service });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

const HOST = `test-obs-${process.pid}`;
const ARTIFACTS = path.join(__dirname, 'artifacts');
let h: Harness;
let d: Docker;
let worker: ChildWorker | undefined;
const receiver = new OtlpReceiver();
let otlpUrl: string;

beforeAll(async () => {
  d = await docker();
  otlpUrl = await receiver.start();
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await worker?.kill();
  await h?.stop();
  await receiver.stop();
  await removeHostSandboxes(HOST);
});

const PRICES = JSON.stringify({ 'claude-test': { input: 3, output: 15 } });

/** The worker's JSON log lines (anything else on stderr is left out). */
function jsonLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function waitFor<T>(what: string, fn: () => T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

it('tells infra errors from tool errors in the JSON log and in `agents status` after a docker kill, and exports spans', async () => {
  worker = await spawnWorker(
    {
      TEMPORAL_ADDRESS: h.env.address,
      ANTHROPIC_BASE_URL: h.mock.url,
      ANTHROPIC_API_KEY: 'test-key',
      HANDS_HOST_ID: HOST,
      DOCKER_HOST: (await resolveDockerHost())!,
      LOG_LEVEL: 'INFO',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
    },
    'all',
  );
  const handle = await startSession(h, {
    id: uniqueId('ses-obs'),
    agent: { limits: { handsHeartbeatTimeoutMs: 3000 } },
  });
  const id = handle.workflowId;

  expect((await bash(h, handle, 'echo up')).output).toBe('up\n[exit 0]');
  const [container] = await sessionContainers(d, id, false);
  const killed = await bash(h, handle, 'sleep 60', {
    timeoutMs: 90_000,
    during: async () => {
      await new Promise((r) => setTimeout(r, 500));
      await d.getContainer(container.Id).kill();
    },
  });
  expect(killed).toMatchObject({ isError: true, error: { kind: 'infra' } });
  const failed = await bash(h, handle, 'echo failing >&2; exit 3');
  expect(failed).toMatchObject({ isError: true, error: { kind: 'tool' } });

  // The log: one JSON object per line, the infra error and the tool error each on a line of its own.
  const lines = jsonLines(worker.stderr());
  const infra = lines.find((l) => l.sessionId === id && l.errorKind === 'infra');
  const tool = lines.find((l) => l.sessionId === id && l.errorKind === 'tool');
  expect(infra).toMatchObject({ level: 'WARN', msg: 'tool error (infra)', eventType: 'tool_result', seq: killed.seq });
  expect(tool).toMatchObject({ level: 'WARN', msg: 'tool error (tool)', eventType: 'tool_result', seq: failed.seq });
  expect(tool).not.toHaveProperty('error');
  const modelCall = lines.find(
    (l) => l.sessionId === id && l.activity === 'callModelToolRefs' && l.msg === 'activity completed',
  );
  expect(modelCall).toMatchObject({ attempt: 1, seq: expect.any(Number), durationMs: expect.any(Number) });
  expect(lines.find((l) => l.sessionId === id && l.activity === 'execute')).toMatchObject({
    attempt: expect.any(Number),
    toolUseId: expect.any(String),
  });

  // `agents status` counts them apart, with tokens, cost and time.
  const text = await runAgents(h.env.address, ['status', id], { MODEL_PRICES: PRICES });
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^tool errors: 1 /m);
  expect(text.stdout).toMatch(/^infra errors: 1 /m);
  expect(text.stdout).toMatch(/^cost: \$\d+\.\d{4}$/m);
  expect(text.stdout).toMatch(/^time: \d+s since /m);
  expect(text.stdout).toMatch(/^usage: \d+ input tokens/m);
  // Kept for a reader: the two log lines and the status output this test checks.
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.writeFileSync(
    path.join(ARTIFACTS, 'infra-vs-tool-errors.txt'),
    `${JSON.stringify(infra)}\n${JSON.stringify(tool)}\n\n$ agents status ${id}\n${text.stdout}`,
  );
  const json = await runAgents(h.env.address, ['status', id, '--json'], { MODEL_PRICES: PRICES });
  const status = JSON.parse(json.stdout);
  expect(status).toMatchObject({ toolErrors: 1, infraErrors: 1, model: 'claude-test', toolCalls: 3 });
  const u = status.usage;
  expect(status.costUsd).toBeCloseTo(
    (u.inputTokens * 3 + u.outputTokens * 15 + u.cacheReadInputTokens * 0.3 + u.cacheCreationInputTokens * 3.75) / 1e6,
    10,
  );
  expect(status.costUsd).toBeGreaterThan(0);
  const unpriced = await runAgents(h.env.address, ['status', id]);
  expect(unpriced.stdout).toMatch(/^cost: unknown \(no price for claude-test; set MODEL_PRICES\)$/m);
  expectBadPrices(await runAgents(h.env.address, ['status', id], { MODEL_PRICES: '{"claude-test":{"input":-1}}' }));

  // Tracing: the worker exported workflow and activity spans to the OTLP endpoint.
  await handle.signal(endSignal, { reason: 'done' });
  await handle.result();
  const names = await waitFor('spans', () => {
    const n = new Set(receiver.spans.map((s) => s.name));
    return n.has('RunWorkflow:sessionWorkflow') &&
      n.has('RunActivity:callModelToolRefs') &&
      n.has('RunActivity:execute')
      ? n
      : undefined;
  });
  expect(names).toContain('StartActivity:callModelToolRefs');
  expect(receiver.spans.find((s) => s.name === 'RunActivity:execute')?.service).toBe('managed-agents-all');
});

function expectBadPrices(r: { code: number | null; stdout: string; stderr: string }) {
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/MODEL_PRICES .*input/);
}
