// The V8 heap of each of this process's worker threads, read through the inspector: a brain worker runs its
// sessions on a thread the SDK starts, whose heap `process.memoryUsage()` does not report.
import { Session } from 'node:inspector';

export interface ThreadHeap {
  /** The thread's inspector title (the SDK's workflow thread is a `[worker N]`). */
  title: string;
  usedBytes: number;
  totalBytes: number;
}

interface Attached {
  sessionId: string;
  workerInfo: { title: string };
}

/**
 * Each worker thread's heap now; a thread that does not answer within `timeoutMs` is left out. The inspector
 * session attaches to the threads only for this call, and detaches after.
 */
export async function threadHeaps(timeoutMs = 2000): Promise<ThreadHeap[]> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
    );
  const attached: Attached[] = [];
  const replies = new Map<string, (result: { usedSize: number; totalSize: number }) => void>();
  session.on('NodeWorker.attachedToWorker', (m: { params: Attached }) => attached.push(m.params));
  session.on('NodeWorker.receivedMessageFromWorker', (m: { params: { sessionId: string; message: string } }) => {
    const reply = JSON.parse(m.params.message) as { id?: number; result?: { usedSize: number; totalSize: number } };
    if (reply.id === 1 && reply.result) replies.get(m.params.sessionId)?.(reply.result);
  });
  try {
    // The threads already running are reported while enable runs.
    await post('NodeWorker.enable', { waitForDebuggerOnStart: false });
    const heaps = await Promise.all(
      attached.map(
        (a) =>
          new Promise<ThreadHeap | undefined>((resolve) => {
            const timer = setTimeout(() => resolve(undefined), timeoutMs);
            replies.set(a.sessionId, (r) => {
              clearTimeout(timer);
              resolve({ title: a.workerInfo.title, usedBytes: r.usedSize, totalBytes: r.totalSize });
            });
            post('NodeWorker.sendMessageToWorker', {
              sessionId: a.sessionId,
              message: JSON.stringify({ id: 1, method: 'Runtime.getHeapUsage' }),
            }).catch(() => resolve(undefined));
          }),
      ),
    );
    return heaps.filter((h): h is ThreadHeap => h !== undefined);
  } finally {
    await post('NodeWorker.disable').catch(() => undefined);
    session.disconnect();
  }
}
