// The tools an agent offers the model: its tool entries bound to kinds (and sandboxes), their specs under the
// agent's names, and its client tools as declared.
import { resolveTool, type Agent, type BoundTool } from '../session/agent';
import type { ToolSpec } from './kind';
import { TOOL_SPECS } from './registry';
import { webFetchSpec } from './web-fetch';

export function boundTools(agent: Agent): Map<string, BoundTool> {
  return new Map(agent.tools.map((t) => resolveTool(t)).map((b) => [b.name, b]));
}

export function buildToolSpecs(agent: Agent): ToolSpec[] {
  const own = [...boundTools(agent).values()].map((b) => {
    const spec = TOOL_SPECS[b.kind];
    const where =
      b.sandbox !== undefined && Object.keys(agent.sandboxes).length > 1 ? ` Runs in the sandbox "${b.sandbox}".` : '';
    // A coordinator's delegate names its roster: the agents it may start threads of.
    const roster =
      b.kind === 'delegate' && agent.roster.length
        ? ` Your roster: ${agent.roster.map((r) => (r.description ? `${r.name} (${r.description})` : r.name)).join('; ')}.`
        : '';
    return { ...spec, name: b.name, description: spec.description + where + roster };
  });
  // web_fetch runs on a tools worker, through the egress gate.
  const web = agent.webFetch ? [webFetchSpec] : [];
  // Client tools are offered as declared; the calling application runs them.
  return [
    ...own,
    ...web,
    ...agent.clientTools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.input_schema as ToolSpec['input_schema'],
    })),
  ];
}
