// Tool specs as a model call's input carries them into history. A spec of the platform's own (a tool kind's, or
// web_fetch's), offered under the agent's name and perhaps with a note added to its description, travels as a
// reference that the model's worker expands from its own registry; any other spec (an MCP server's, a client
// tool's) travels whole. The default toolset's specs are 1,945 bytes of JSON, and 154 by reference: sent whole,
// they were written to history with every model call.
import { valuesDigest } from '../session/digest';
import type { ToolSpec } from './kind';
import { TOOL_SPECS } from './registry';
import { webFetchSpec } from './web-fetch';

/**
 * A spec of the platform's own: `ref` names it, `name` is the agent's, `suffix` what the description adds, and
 * `digest` is the digest of the spec `ref` names in the code that sent it: a worker whose code has another spec under
 * that name (a version with another description or schema) refuses the reference instead of offering the model a
 * spec the session does not.
 */
export interface ToolRef {
  ref: string;
  name: string;
  suffix?: string;
  digest: string;
}

/** A spec as a model call's input carries it: by reference, or whole. */
export type WireToolSpec = ToolRef | ToolSpec;

const SPEC_KEYS = new Set(['name', 'description', 'input_schema']);

/** The platform's own specs, by the reference that names them. */
function bases(): Map<string, ToolSpec> {
  return new Map<string, ToolSpec>([...Object.entries(TOOL_SPECS), ['web_fetch', webFetchSpec]]);
}

/** The spec `ref` stands for, or undefined when this code has no spec of that reference, or another one. */
function expandOne(ref: ToolRef): ToolSpec | undefined {
  const base = bases().get(ref.ref);
  if (!base || valuesDigest([base]) !== ref.digest) return undefined;
  // A copy of its own: nothing done to one call's specs reaches the registry.
  const copy = JSON.parse(JSON.stringify(base)) as ToolSpec;
  return { ...copy, name: ref.name, description: copy.description + (ref.suffix ?? '') };
}

/**
 * `specs` as a model call carries them: each spec that a reference reproduces exactly (the same keys, the same
 * schema, its description the base's with a suffix) as that reference, every other one whole.
 */
export function compactToolSpecs(specs: readonly ToolSpec[]): WireToolSpec[] {
  const byKey = [...bases()].map(([ref, spec]) => ({ ref, spec, schema: JSON.stringify(spec.input_schema) }));
  return specs.map((s) => {
    if (!Object.keys(s).every((k) => SPEC_KEYS.has(k))) return s;
    const schema = JSON.stringify(s.input_schema);
    const base = byKey.find((b) => b.schema === schema && s.description.startsWith(b.spec.description));
    if (!base) return s;
    const ref: ToolRef = { ref: base.ref, name: s.name, digest: valuesDigest([base.spec]) };
    const suffix = s.description.slice(base.spec.description.length);
    if (suffix !== '') ref.suffix = suffix;
    // Only a reference that gives back this very spec stands for it.
    const back = expandOne(ref);
    return back && JSON.stringify(back) === JSON.stringify(s) ? ref : s;
  });
}

export class UnknownToolRefError extends Error {}

/** The specs a model call's input carries, whole; UnknownToolRefError for a reference this code does not know. */
export function expandToolSpecs(wire: readonly WireToolSpec[]): ToolSpec[] {
  return wire.map((w) => {
    // A spec whole always has a schema; a reference never does.
    if ('input_schema' in w) return w;
    const spec = expandOne(w);
    if (!spec)
      throw new UnknownToolRefError(
        `this worker has no tool spec ${JSON.stringify(w.ref)} as the session offers it (tool ${w.name})`,
      );
    return spec;
  });
}
