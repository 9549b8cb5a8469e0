// The DataConverter every client and worker uses: encrypted payloads and encrypted failure messages.
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec } from './encryption-codec';
import { parseCodecKeys, type CodecKeys } from './codec-keys';

/**
 * The failure converter goes by path, not by object: a worker bundles that module into the workflow sandbox,
 * where workflow code turns its errors into failures. A prebuilt bundle must be built with the same path
 * (`bundleWorkflowCode({ failureConverterPath })`), since a worker ignores it for a bundle it did not build.
 */
export const failureConverterPath = require.resolve('./failure-converter');

/** `keys` is a parsed CODEC_KEY or its raw value. */
export function createDataConverter(keys: CodecKeys | string): DataConverter {
  const parsed = typeof keys === 'string' ? parseCodecKeys(keys) : keys;
  return { payloadCodecs: [new EncryptionCodec(parsed)], failureConverterPath };
}
