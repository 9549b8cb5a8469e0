// The failure converter for clients, workers and the workflow sandbox (a worker's failureConverterPath): failure
// messages and stack traces move into a payload, so the codec encrypts them too.
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
