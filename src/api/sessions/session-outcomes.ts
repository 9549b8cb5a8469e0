// Outcomes on the API: the `user.define_outcome` event as `events.send` and `initial_events` take it (its rubric a
// text or a file of the workspace, read here, at send time), the definition the workflow is given, and
// `session.outcome_evaluations` from the workflow's state (src/workflows/outcome-loop.ts).
import { z } from 'zod';
import type { OutcomeStatus } from '../../session/contract';
import {
  DEFAULT_MAX_ITERATIONS,
  MAX_DESCRIPTION_CHARS,
  MAX_MAX_ITERATIONS,
  MAX_RUBRIC_CHARS,
  OUTCOME_STATES,
  type OutcomeDefinition,
} from '../../session/outcome-grading';
import { findFile, isExpired } from '../../storage/repos/files-repo';
import { badRequest } from '../api-error';
import type { ApiDeps } from '../route-context';
import { IdSchema, newId } from '../shared-fields';

export const DefineOutcomeEventSchema = z.strictObject({
  type: z.literal('user.define_outcome'),
  description: z
    .string()
    .refine((t) => t.trim().length > 0, 'description must not be empty')
    .refine(
      (t) => t.length <= MAX_DESCRIPTION_CHARS,
      `description must be at most ${MAX_DESCRIPTION_CHARS} characters`,
    ),
  rubric: z.discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('text'),
      content: z
        .string()
        .refine((t) => t.trim().length > 0, 'content must not be empty')
        .refine((t) => t.length <= MAX_RUBRIC_CHARS, `content must be at most ${MAX_RUBRIC_CHARS} characters`),
    }),
    z.strictObject({ type: z.literal('file'), file_id: IdSchema }),
  ]),
  max_iterations: z.number().int().min(1).max(MAX_MAX_ITERATIONS).nullish(),
});
export type DefineOutcomeEvent = z.infer<typeof DefineOutcomeEventSchema>;

export const OutcomeEvaluationSchema = z
  .object({
    type: z.literal('outcome_evaluation'),
    outcome_id: z.string(),
    description: z.string(),
    result: z.enum(OUTCOME_STATES),
    iteration: z.number().int(),
    explanation: z.string().nullable(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'OutcomeEvaluation' });

/**
 * The definition the workflow is given, with a new `outc_` id; a file rubric is read now: a file that is missing,
 * expired, over MAX_RUBRIC_CHARS or not UTF-8 text is a 400 naming `field`.
 */
export async function outcomeDefinition(
  deps: ApiDeps,
  workspaceId: string,
  e: DefineOutcomeEvent,
  field: string,
): Promise<OutcomeDefinition> {
  const maxIterations = e.max_iterations ?? DEFAULT_MAX_ITERATIONS;
  const base = { outcomeId: newId('outc'), description: e.description, maxIterations };
  if (e.rubric.type === 'text') return { ...base, rubric: e.rubric.content };
  const fileId = e.rubric.file_id;
  const at = `${field}.rubric.file_id`;
  const row = await findFile(deps.db, workspaceId, fileId);
  if (!row) throw badRequest(`${at}: no file ${fileId} in this workspace`);
  if (isExpired(row) || !row.blob_id) throw badRequest(`${at}: file ${fileId} has expired`);
  // UTF-8 takes at most 4 bytes a character: a file over this cannot be within the limit.
  if (row.size_bytes > MAX_RUBRIC_CHARS * 4)
    throw badRequest(
      `${at}: file ${fileId} is ${row.size_bytes} bytes; a rubric is at most ${MAX_RUBRIC_CHARS} characters`,
    );
  const bytes = await deps.blobs.get(row.blob_id);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest(`${at}: file ${fileId} is not UTF-8 text; a rubric file is plain text or markdown`);
  }
  if (text.includes('\0')) throw badRequest(`${at}: file ${fileId} is binary; a rubric file is plain text or markdown`);
  if (text.length > MAX_RUBRIC_CHARS)
    throw badRequest(`${at}: file ${fileId} has ${text.length} characters; a rubric is at most ${MAX_RUBRIC_CHARS}`);
  if (text.trim() === '') throw badRequest(`${at}: file ${fileId} is empty`);
  return { ...base, rubric: text, rubricFileId: fileId };
}

/** The echo of a define_outcome as `events.send` returns it: as the log projects it (the rubric as its text). */
export function outcomeEcho(d: OutcomeDefinition, id: string, processedAt: string): Record<string, unknown> {
  return {
    type: 'user.define_outcome',
    id,
    processed_at: processedAt,
    outcome_id: d.outcomeId,
    description: d.description,
    rubric: { type: 'text', content: d.rubric },
    max_iterations: d.maxIterations,
  };
}

/** `session.outcome_evaluations` from the workflow's status. */
export function outcomeEvaluations(outcomes: OutcomeStatus[] | undefined): z.infer<typeof OutcomeEvaluationSchema>[] {
  return (outcomes ?? []).map((o) => ({
    type: 'outcome_evaluation' as const,
    outcome_id: o.outcomeId,
    description: o.description,
    result: o.result,
    iteration: o.iteration,
    explanation: o.explanation,
    completed_at: o.completedAt,
  }));
}
