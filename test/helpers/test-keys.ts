// One CODEC_KEY per test process, set on import before anything starts, so in-process clients and workers,
// `agents` runs and child workers (which inherit the environment) all read each other's encrypted payloads.
import { randomBytes } from 'node:crypto';
import type { DataConverter } from '@temporalio/common';
import { createDataConverter } from '../../src/codec';

export const TEST_CODEC_KEY = randomBytes(32).toString('base64');
process.env.CODEC_KEY = TEST_CODEC_KEY;

let converter: DataConverter | undefined;

/** The converter every test client and in-process worker uses: the one workers build from CODEC_KEY. */
export function testDataConverter(): DataConverter {
  converter ??= createDataConverter(TEST_CODEC_KEY);
  return converter;
}
