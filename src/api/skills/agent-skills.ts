// An agent's `skills`: each custom skill it names, pinned to a concrete version of the workspace's skill when the
// agent is created or updated (an omitted version is the newest one then). Anthropic's pre-built skills do not
// exist on this platform, so naming one is a 400 that says so.
import { z } from 'zod';
import type { Queryable } from '../../storage/db';
import { resolveSkillVersion } from '../../storage/repos/skills-repo';
import { badRequest } from '../api-error';
import { IdSchema } from '../shared-fields';

/** The most skills one agent may name. */
export const MAX_AGENT_SKILLS = 20;

const VersionParamSchema = z.string().max(128, 'version is at most 128 characters').nullish();

/** What the SDK sends (BetaManagedAgentsSkillParams). */
export const SkillParamsSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('custom'), skill_id: IdSchema, version: VersionParamSchema }),
    z.strictObject({ type: z.literal('anthropic'), skill_id: z.string().max(256), version: VersionParamSchema }),
  ],
  { error: 'type must be custom or anthropic' },
);
export type SkillParams = z.infer<typeof SkillParamsSchema>;

export const SkillListParamsSchema = z
  .array(SkillParamsSchema)
  .max(MAX_AGENT_SKILLS, `an agent has at most ${MAX_AGENT_SKILLS} skills`);

/** A skill as an agent holds and shows it (BetaManagedAgentsCustomSkill): its version is always an id. */
export const AgentSkillSchema = z.object({
  type: z.literal('custom'),
  skill_id: z.string(),
  version: z.string(),
});
export type AgentSkill = z.infer<typeof AgentSkillSchema>;

/**
 * Each skill of `params` resolved in the workspace, or a 400 naming the entry: an unknown skill or version, an
 * Anthropic skill, the same skill twice, or two skills of one name (they would mount at the same directory).
 */
export async function resolveAgentSkills(
  q: Queryable,
  workspaceId: string,
  params: readonly SkillParams[],
): Promise<AgentSkill[]> {
  const out: AgentSkill[] = [];
  const ids = new Map<string, number>();
  const names = new Map<string, number>();
  for (const [i, p] of params.entries()) {
    if (p.type === 'anthropic')
      throw badRequest(
        `skills.${i}: Anthropic's pre-built skills (${p.skill_id}) are not available on this platform; upload the skill as a custom skill (client.beta.skills.create) and name it with type custom`,
      );
    const asked = p.version ?? 'latest';
    const v = await resolveSkillVersion(q, workspaceId, p.skill_id, asked);
    if (!v) {
      const skill = await resolveSkillVersion(q, workspaceId, p.skill_id, 'latest');
      throw badRequest(
        skill
          ? `skills.${i}.version: skill ${p.skill_id} has no version ${asked}`
          : `skills.${i}.skill_id: no skill ${p.skill_id} in this workspace`,
      );
    }
    const twice = ids.get(v.skillId);
    if (twice !== undefined) throw badRequest(`skills.${i}: skill ${v.skillId} is already skills.${twice}`);
    const clash = names.get(v.name);
    if (clash !== undefined)
      throw badRequest(
        `skills.${i}: skills.${clash} has the same name ${v.name}, and each mounts at /mnt/skills/<name>`,
      );
    ids.set(v.skillId, i);
    names.set(v.name, i);
    out.push({ type: 'custom', skill_id: v.skillId, version: v.version });
  }
  return out;
}
