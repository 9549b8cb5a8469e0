// One CODEC_KEY per test process, set on import before anything starts, so in-process clients and workers,
// `agents` runs and child workers (which inherit the environment) all read each other's encrypted payloads.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { createDataConverter } from '../../src/codec';

/** Replay fixtures are recorded under a fixed key kept beside them; it protects nothing. */
export const FIXTURE_CODEC_KEY = fs.readFileSync(path.join(__dirname, '../histories/fixture-codec.key'), 'utf8').trim();

export const TEST_CODEC_KEY =
  process.env.RECORD_HISTORIES === '1' ? FIXTURE_CODEC_KEY : randomBytes(32).toString('base64');
process.env.CODEC_KEY = TEST_CODEC_KEY;

let converter: DataConverter | undefined;

/** The converter every test client and in-process worker uses: the one workers build from CODEC_KEY. */
export function testDataConverter(): DataConverter {
  converter ??= createDataConverter(TEST_CODEC_KEY);
  return converter;
}
