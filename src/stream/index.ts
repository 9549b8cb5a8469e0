// Live previews of work in progress: the worker-side hub, the frames and tokens of the SSE transport, and the API's relay.
export { MAX_PREVIEW_CHARS, StreamHub, streamKey, type Publisher, type StreamFrame, type StreamItem } from './hub';
export { StreamRelay } from './relay';
export { identityWithStream, streamToken, streamUrlOf } from './token';
