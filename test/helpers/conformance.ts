// The conformance check of the API suites: every response of a test API server, whoever fetches it (the SDK or a
// raw `fetch`), is validated with ajv against the JSON Schemas generated from the installed SDK's own declarations
// (dist/sdk-contract.json, written by `npm run build` from scripts/sdk-contract.ts): a JSON body against the return
// type of the SDK method its method and path map to, each event of an SSE stream against the stream's event union
// (a `platform.*` event against the platform's own declaration), and every error against the SDK's ErrorResponse
// with its `details` against ErrorDetails, with a `request-id` header on every reply. Violations are collected and
// fail the test they happened in (`assertConformance`, run after each test by test/helpers/api.ts).
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import fs from 'node:fs';
import path from 'node:path';
import type { SdkContract, SdkMethod } from '../../scripts/sdk-contract';

const CONTRACT_FILE = path.join(__dirname, '../../dist/sdk-contract.json');

interface Route {
  method: SdkMethod;
  pattern: RegExp;
  literals: number;
}

let loaded: { contract: SdkContract; ajv: Ajv; routes: Route[] } | undefined;
function load() {
  if (loaded) return loaded;
  if (!fs.existsSync(CONTRACT_FILE))
    throw new Error(`${CONTRACT_FILE} is missing: run \`npm run build\` (it generates the SDK's schemas)`);
  const contract = JSON.parse(fs.readFileSync(CONTRACT_FILE, 'utf8')) as SdkContract;
  const ajv = new Ajv({ allErrors: true, strict: false, discriminator: true });
  const defs = contract.schema.definitions as Record<string, Json>;
  ajv.addSchema(withDiscriminators({ $id: 'sdk', definitions: defs, properties: contract.schema.properties }, defs));
  const routes = contract.methods
    .filter((m) => m.schema && m.route && m.verb)
    .map((method) => {
      const parts = method.route!.split('/');
      const pattern = new RegExp(
        `^${parts.map((p) => (/^\{\w+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}$`,
      );
      return { method, pattern, literals: parts.filter((p) => !p.startsWith('{')).length };
    })
    // `/work/poll` before `/work/{work_id}`.
    .sort((a, b) => b.literals - a.literals);
  loaded = { contract, ajv, routes };
  return loaded;
}

const validators = new Map<string, ValidateFunction>();
function validator(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) {
    const { ajv } = load();
    v = ajv.getSchema(`sdk#${ref}`);
    if (!v) throw new Error(`no schema at ${ref} in ${CONTRACT_FILE}`);
    validators.set(ref, v);
  }
  return v;
}
const pointer = (key: string) => `/properties/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;

/** The platform's own routes, which the SDK has no method for, though an SDK route's pattern would match them. */
const OWN_ROUTES = [/^\/v1\/environments\/[^/]+\/work\/workers$/];

/** The SDK method a request is a call of, by its verb and path. */
export function sdkMethodFor(verb: string, pathname: string): SdkMethod | undefined {
  if (OWN_ROUTES.some((r) => r.test(pathname))) return undefined;
  return load().routes.find((r) => r.method.verb === verb.toUpperCase() && r.pattern.test(pathname))?.method;
}

type Json = { [k: string]: unknown };

/**
 * Rewrites each `anyOf` of object types that all carry a distinct constant in one required property (`type`, or
 * `name` for tool configs) as a `oneOf` with ajv's `discriminator`: a value is then checked against its own branch
 * only, so an `agent.message` missing `content` is reported as that, not as 41 branches that failed.
 */
function withDiscriminators(schema: Json, definitions: Record<string, Json>): Json {
  const resolve = (s: Json): Json | undefined =>
    typeof s.$ref === 'string' ? definitions[decodeURIComponent(s.$ref.replace('#/definitions/', ''))] : s;
  const tagOf = (members: Json[]): string | undefined => {
    const objects = members.map(resolve);
    if (objects.some((o) => !o || o.type !== 'object')) return undefined;
    for (const tag of ['type', 'name']) {
      const values = objects.map(
        (o) => ((o!.properties as Record<string, Json> | undefined)?.[tag] as Json | undefined)?.const,
      );
      const required = objects.every((o) => (o!.required as string[] | undefined)?.includes(tag));
      if (required && values.every((v) => typeof v === 'string') && new Set(values).size === values.length) return tag;
    }
    return undefined;
  };
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node as Json)) out[k] = walk(v);
    const anyOf = out.anyOf as Json[] | undefined;
    const tag = anyOf && anyOf.length > 1 ? tagOf(anyOf) : undefined;
    if (tag) {
      delete out.anyOf;
      out.oneOf = anyOf;
      out.discriminator = { propertyName: tag };
    }
    return out;
  };
  return walk(schema) as Json;
}

/** ajv's errors without the bare "must match a schema in anyOf" when a more specific one says why. */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const specific = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  return specific.length ? specific : errors;
}

function describe(errors: ErrorObject[], value: unknown): string {
  return relevantErrors(errors)
    .slice(0, 8)
    .map((e) => {
      const extra =
        e.keyword === 'additionalProperties'
          ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
          : e.keyword === 'const'
            ? ` (${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)})`
            : e.keyword === 'enum'
              ? ` (${JSON.stringify((e.params as { allowedValues: unknown }).allowedValues)})`
              : '';
      const at = e.instancePath || '/';
      const got =
        at === '/'
          ? ''
          : ` got ${JSON.stringify(
              e.instancePath
                .split('/')
                .slice(1)
                .reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], value),
            )?.slice(0, 80)}`;
      return `${at}: ${e.message}${extra}${got} [${e.schemaPath}]`;
    })
    .join('; ');
}

/** What is wrong with `value` as the response of SDK method `name` (`beta.agents.create`), or `$error` etc.; empty when nothing. */
export function schemaErrors(name: string, value: unknown): string {
  const v = validator(pointer(name));
  return v(value) ? '' : describe(v.errors ?? [], value);
}

const violations: string[] = [];
const seen = new Set<string>();

function check(where: string, ref: string, typeName: string, value: unknown): void {
  const v = validator(ref);
  if (v(value)) return;
  violations.push(`${where}: not a ${typeName}: ${describe(v.errors ?? [], value)}`);
}

function checkError(where: string, body: unknown, pathname = ''): void {
  const b = body as { error?: { details?: unknown } } | null;
  const details = b && typeof b === 'object' && b.error && typeof b.error === 'object' ? b.error.details : undefined;
  // The SDK reads `error.details` (APIError.details: ErrorDetails) beside the ErrorObject its body type declares.
  if (details !== undefined) {
    check(where, pointer('$errorDetails'), 'ErrorDetails', details);
    const { details: _, ...error } = b!.error!;
    body = { ...b, error };
  }
  // The memory stores' errors are the SDK's BetaManagedAgentsErrorObject, which adds their own 409s.
  if (pathname.startsWith('/v1/memory_stores')) check(where, pointer('$memoryError'), 'memory store error', body);
  else check(where, pointer('$error'), 'ErrorResponse', body);
}

/** Checks one streamed event: the SDK's stream union, or the platform's own declaration for `platform.*`. */
function checkEvent(where: string, method: SdkMethod, event: unknown): void {
  const type = (event as { type?: unknown } | null)?.type;
  if (typeof type === 'string' && type.startsWith('platform.'))
    check(`${where} event ${type}`, pointer('$platformEvent'), 'PlatformEvent', event);
  else check(`${where} event ${String(type)}`, pointer(method.name), method.type ?? method.name, event);
}

/** A stream that passes `body` through unchanged and checks each SSE frame's `data` as it goes by. */
function checkedSse(body: ReadableStream<Uint8Array>, where: string, method: SdkMethod): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let buffer = '';
  const frame = (raw: string) => {
    const lines = raw.split(/\r?\n/);
    const event = lines
      .find((l) => l.startsWith('event:'))
      ?.slice(6)
      .trim();
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (event === 'ping' || !data) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      violations.push(`${where}: an SSE frame's data is not JSON: ${data.slice(0, 120)}`);
      return;
    }
    if (event === 'error') return checkError(`${where} error frame`, parsed);
    const type = (parsed as { type?: unknown }).type;
    if (event !== undefined && event !== type)
      violations.push(`${where}: frame \`event: ${event}\` carries data of type ${String(type)}`);
    checkEvent(where, method, parsed);
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        ctl.enqueue(chunk);
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.search(/\r?\n\r?\n/)) >= 0) {
          frame(buffer.slice(0, at));
          buffer = buffer.slice(at).replace(/^\r?\n\r?\n/, '');
        }
      },
    }),
  );
}

/** Checks one response of a watched server; returns the response the caller gets (a stream is re-wrapped). */
async function checkResponse(verb: string, url: URL, res: Response): Promise<Response> {
  const method = sdkMethodFor(verb, url.pathname);
  const where = `${verb} ${url.pathname} → ${res.status}${method ? ` (${method.name})` : ''}`;
  if (url.pathname.startsWith('/v1/') && !res.headers.get('request-id'))
    violations.push(`${where}: no request-id header`);
  const type = res.headers.get('content-type') ?? '';
  if (res.status >= 400) {
    if (!type.includes('application/json')) {
      if (url.pathname.startsWith('/v1/'))
        violations.push(`${where}: an error with content-type ${type || 'none'}, not the JSON envelope`);
      return res;
    }
    checkError(where, await res.clone().json(), url.pathname);
    return res;
  }
  // A download (`files.download`) is the content itself, typed by the file's own MIME type.
  if (!method || method.kind === 'binary') return res;
  if (method.kind === 'stream' && type.includes('text/event-stream') && res.body) {
    return new Response(checkedSse(res.body, where, method), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  }
  if (type.includes('application/json')) {
    let body = (await res.clone().json()) as { data?: unknown[] };
    // Listed events: each one that is the platform's own is checked against its declaration, the rest as the page.
    if (
      (method.name === 'beta.sessions.events.list' || method.name === 'beta.sessions.threads.events.list') &&
      Array.isArray(body.data)
    ) {
      const own = (e: unknown) => String((e as { type?: unknown }).type).startsWith('platform.');
      for (const e of body.data.filter(own))
        check(`${where} event ${(e as { type: string }).type}`, pointer('$platformEvent'), 'PlatformEvent', e);
      body = { ...body, data: body.data.filter((e) => !own(e)) };
    }
    check(
      where,
      pointer(method.name),
      method.page ? `${method.page}<${method.type}>` : (method.type ?? method.name),
      body,
    );
  } else if (res.status !== 204) violations.push(`${where}: content-type ${type || 'none'}, not JSON`);
  return res;
}

const watched = new Set<string>();
let installed = false;

/** Checks every response from `origin` (a test API's URL) from now on, whoever fetches it; `unwatch` stops. */
export function watchConformance(origin: string): () => void {
  const o = new URL(origin).origin;
  watched.add(o);
  if (!installed) {
    installed = true;
    const original = globalThis.fetch;
    globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const res = await original(input, init);
      if (!watched.has(url.origin)) return res;
      const verb = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
      return checkResponse(verb, url, res);
    };
  }
  return () => watched.delete(o);
}

/** The violations so far, each once, and forgets them. */
export function takeViolations(): string[] {
  const out = violations.splice(0).filter((v) => !seen.has(v) && seen.add(v));
  return out;
}

/** Throws when any response or event since the last call disagreed with the SDK's types. */
export function assertConformance(): void {
  const v = takeViolations();
  if (v.length)
    throw new Error(`responses that disagree with the SDK's types (dist/sdk-contract.json):\n- ${v.join('\n- ')}`);
}
