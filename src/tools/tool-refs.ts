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

interface Base {
  ref: string;
  spec: ToolSpec;
  /** Its input schema as JSON. */
  schema: string;
  digest: string;
}

/**
 * The platform's own specs by the reference that names them, each with its schema as JSON and its digest, built on
 * first use: computed per call, the digests alone took about 0.8 ms of a workflow task.
 */
let bases: Map<string, Base> | undefined;
function basesByRef(): Map<string, Base> {
  bases ??= new Map(
    [...Object.entries(TOOL_SPECS), ['web_fetch', webFetchSpec] as const].map(([ref, spec]) => [
      ref,
      { ref, spec, schema: JSON.stringify(spec.input_schema), digest: valuesDigest([spec]) },
    ]),
  );
  return bases;
}

/** `base` under the agent's `name`, its description followed by `suffix`. */
function fromBase(base: ToolSpec, name: string, suffix = ''): ToolSpec {
  return { ...base, name, description: base.description + suffix };
}

/**
 * `specs` as a model call carries them: each spec that a reference reproduces exactly (the same keys, the same
 * schema, its description the base's with a suffix) as that reference, every other one whole.
 */
export function compactToolSpecs(specs: readonly ToolSpec[]): WireToolSpec[] {
  const byKey = [...basesByRef().values()];
  return specs.map((s) => {
    if (!Object.keys(s).every((k) => SPEC_KEYS.has(k))) return s;
    const schema = JSON.stringify(s.input_schema);
    const base = byKey.find((b) => b.schema === schema && s.description.startsWith(b.spec.description));
    const suffix = base && s.description.slice(base.spec.description.length);
    // Only a reference that gives back this very spec (its keys in the same order) stands for it.
    if (!base || JSON.stringify(fromBase(base.spec, s.name, suffix)) !== JSON.stringify(s)) return s;
    const ref: ToolRef = { ref: base.ref, name: s.name, digest: base.digest };
    if (suffix) ref.suffix = suffix;
    return ref;
  });
}

export class UnknownToolRefError extends Error {}

/** The specs a model call's input carries, whole; UnknownToolRefError for a reference this code does not know. */
export function expandToolSpecs(wire: readonly WireToolSpec[]): ToolSpec[] {
  return wire.map((w) => {
    // A spec whole always has a schema; a reference never does.
    if ('input_schema' in w) return w;
    // A worker whose code has another spec under the name (another description or schema) refuses it too.
    const base = basesByRef().get(w.ref);
    if (!base || base.digest !== w.digest)
      throw new UnknownToolRefError(
        `this worker has no tool spec ${JSON.stringify(w.ref)} as the session offers it (tool ${w.name})`,
      );
    // A copy of its own: nothing done to one call's specs reaches the registry.
    return fromBase(JSON.parse(JSON.stringify(base.spec)) as ToolSpec, w.name, w.suffix);
  });
}
