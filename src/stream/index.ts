// Live streaming of work in progress: the worker-side hub and SSE endpoint, the API's relay, and the watcher that follows them.
export { MAX_PREVIEW_CHARS, StreamHub, streamKey, type Publisher, type StreamFrame, type StreamItem } from './hub';
export { StreamRelay } from './relay';
export { StreamServer, type StreamServerOptions } from './server';
export { identityWithStream, streamToken, streamUrlOf } from './token';
export { SessionWatcher, type WatchMode, type WatchOptions } from './watch';
