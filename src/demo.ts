// `npm start`: a local dev server, all workers and a short session printed as it happens, plus the Web UI link.
import { Client, Connection } from '@temporalio/client';
import { clientInterceptors } from './log/query-retry';
import { createDataConverter } from './codec';
import { loadConfig } from './config';
import { clientConnectionOptions } from './temporal-connection';
import { loadCodecKey } from './key-files';
import { startLocalStack } from './dev/local-stack';
import { defaultAgent } from './session/agent';
import type { SessionEvent } from './session/events';
import { formatEvent } from './session/format';
import { BRAIN_TASK_QUEUE } from './session/queues';
import { endSignal, eventsQuery, sendMessageUpdate, type SessionWorkflow } from './session/contract';
import { endsTurn } from './session/turn-end';

const TURNS = [
  'Hello! Who are you?',
  'Please run `echo "hello from $(whoami) in $(pwd)"; uname -sm` in your sandbox.',
  "What has happened in this session's log so far? Use your session_events tool.",
  'Thanks, that is all for now.',
];

async function main() {
  const config = loadConfig();
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const stack = await startLocalStack(config, log);
  const connection = await Connection.connect(clientConnectionOptions(config));
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: createDataConverter(loadCodecKey(config)),
    interceptors: clientInterceptors,
  });
  const sessionId = `demo-${Date.now()}`;
  try {
    const handle = await client.workflow.start<SessionWorkflow>('sessionWorkflow', {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: sessionId,
      args: [
        {
          agent: {
            ...defaultAgent(config.AGENT_MODEL),
            system: 'You are a concise assistant in a demo of durable agent sessions.',
          },
        },
      ],
    });
    log(`session ${sessionId} started`);
    let next = 0;
    const printNew = async (): Promise<SessionEvent[]> => {
      const page = await handle.query(eventsQuery, { from: next });
      for (const e of page.events) process.stdout.write(`${formatEvent(e)}\n`);
      next = page.nextSeq;
      return page.events;
    };
    for (const text of TURNS) {
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
      // Print events as they arrive until the turn is over.
      for (let done = false; !done;) {
        const fresh = await printNew();
        done = fresh.some(endsTurn);
        if (!done) await new Promise((r) => setTimeout(r, 200));
      }
    }
    await handle.signal(endSignal, { reason: 'demo finished' });
    await handle.result();
    await printNew();
    log(
      `\nWeb UI: ${stack.uiUrl ?? 'http://localhost:8233'}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${sessionId}`,
    );
    if (process.stdin.isTTY) {
      log('The dev server stays up so you can browse the Web UI; Ctrl-C stops it.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    }
  } finally {
    await connection.close();
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
