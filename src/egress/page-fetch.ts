// web_fetch on a tools worker: one URL fetched through the egress gate, each redirect checked by the gate and
// against the agent's domain lists before anything connects to it, the page's text returned capped. What a
// refused service would have sent never reaches the model: a refusal is decided before its connection is made.
import { Context } from '@temporalio/activity';
import { convert } from 'html-to-text';
import { capOutput } from '../tools/kind';
import type { WebFetchConfig } from '../tools/web-fetch';
import { EgressRefusedError, type EgressGate } from './gate';

export interface WebFetchActivityInput {
  sessionId: string;
  toolUseId: string;
  url: string;
  config: WebFetchConfig;
}

export interface WebFetchActivityOutput {
  output: string;
  isError: boolean;
}

/** Characters of text a call returns when the agent sets no max_content_tokens. */
export const WEB_FETCH_DEFAULT_CHARS = 32 * 1024;
/** Characters a call returns at most, whatever max_content_tokens says. */
export const WEB_FETCH_MAX_CHARS = 400 * 1024;
/** Bytes of a response body read at most; the rest is not downloaded. */
export const WEB_FETCH_MAX_BYTES = 10 * 1024 * 1024;
const CHARS_PER_TOKEN = 4;
const MAX_REDIRECTS = 5;
const TIMEOUT_MS = 30_000;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const HTML = /^(text\/html|application\/xhtml\+xml)$/;
const TEXT = /^(text\/[a-z0-9.+-]+|application\/(json|xml|javascript|ecmascript|x-ndjson|[a-z0-9.-]+\+(json|xml)))$/;

/** A web_fetch error as the model reads it: the Messages API's error code, then what happened. */
const failure = (code: string, message: string): WebFetchActivityOutput => ({
  output: `web_fetch error (${code}): ${message}`,
  isError: true,
});

/** Whether `host` is `domain` or one of its subdomains. */
export function inDomain(host: string, domain: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, '');
  const d = domain.toLowerCase().replace(/^\.+|\.+$/g, '');
  return h === d || h.endsWith(`.${d}`);
}

/** Why the agent's domain lists refuse a URL's host, or undefined. */
export function domainRefusal(url: URL, config: WebFetchConfig): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (config.allowedDomains && !config.allowedDomains.some((d) => inDomain(host, d)))
    return `${host} is not in the agent's allowed_domains`;
  const blocked = config.blockedDomains?.find((d) => inDomain(host, d));
  if (blocked) return `${host} is in the agent's blocked_domains (${blocked})`;
  return undefined;
}

/** A body read up to `max` bytes, decoded as UTF-8; the rest is never downloaded. */
async function readCapped(res: Response, max: number): Promise<{ text: string; cut: boolean }> {
  const reader = res.body?.getReader();
  if (!reader) return { text: '', cut: false };
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
    if (bytes >= max) {
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).subarray(0, max).toString('utf8'), cut: true };
    }
  }
  return { text: Buffer.concat(chunks).toString('utf8'), cut: false };
}

const titleOf = (html: string) => /<title[^>]*>([^<]*)<\/title>/i.exec(html)?.[1]?.replace(/\s+/g, ' ').trim();

/** The page's text: HTML converted by html-to-text (scripts, styles and images left out), other text as it is. */
function pageText(body: string, type: string): { text: string; title?: string } {
  if (!HTML.test(type)) return { text: body };
  const text = convert(body, {
    wordwrap: false,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { ignoreHref: false, hideLinkHrefIfSameAsText: true } },
    ],
  });
  return { text, title: titleOf(body) };
}

/** Fetches one URL for web_fetch. Refusals and failures are results the model reads; nothing here throws for them. */
export async function webFetch(
  gate: EgressGate,
  input: { url: string; config: WebFetchConfig },
  signal?: AbortSignal,
): Promise<WebFetchActivityOutput> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    return failure('invalid_input', `${JSON.stringify(input.url.slice(0, 200))} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return failure('invalid_input', 'only http and https URLs are fetched');
  if (url.username || url.password) return failure('invalid_input', 'a URL with credentials in it is refused');
  const timeout = AbortSignal.timeout(TIMEOUT_MS);
  const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: Response;
  for (let hop = 0; ; hop++) {
    const refused = domainRefusal(url, input.config);
    if (refused) return failure('url_not_allowed', `refused ${hop ? 'a redirect to ' : ''}${url.origin}: ${refused}`);
    try {
      res = await gate.fetch(url, {
        redirect: 'manual',
        signal: abort,
        headers: {
          accept: 'text/html, text/plain;q=0.9, application/json;q=0.8, */*;q=0.1',
          'user-agent': 'managed-agents-web-fetch/1',
        },
      });
    } catch (err) {
      if (err instanceof EgressRefusedError)
        return failure('url_not_allowed', `${hop ? 'a redirect was refused: ' : ''}${err.message}`);
      if (timeout.aborted)
        return failure('url_not_accessible', `${url.origin} did not answer within ${TIMEOUT_MS / 1000} s`);
      if (signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return failure(
        'url_not_accessible',
        `${url.origin} could not be reached (${cause?.code ?? cause?.message ?? (err as Error).message})`,
      );
    }
    const location = res.headers.get('location');
    if (!REDIRECTS.has(res.status) || !location) break;
    await res.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS)
      return failure('url_not_accessible', `more than ${MAX_REDIRECTS} redirects from ${input.url.slice(0, 200)}`);
    try {
      url = new URL(location, url);
    } catch {
      return failure('url_not_accessible', `${url.origin} redirected to something that is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return failure('url_not_allowed', `refused a redirect to a ${url.protocol} URL`);
  }
  const type = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (res.status === 429) {
    await res.body?.cancel().catch(() => undefined);
    return failure('too_many_requests', `${url.origin} answered 429 Too Many Requests`);
  }
  if (res.status < 200 || res.status >= 300) {
    await res.body?.cancel().catch(() => undefined);
    return failure('url_not_accessible', `${url.href.slice(0, 500)} answered HTTP ${res.status}`);
  }
  if (type !== '' && !HTML.test(type) && !TEXT.test(type)) {
    await res.body?.cancel().catch(() => undefined);
    return failure(
      'unsupported_content_type',
      `${url.href.slice(0, 500)} is ${type}; web_fetch returns text content only`,
    );
  }
  const body = await readCapped(res, WEB_FETCH_MAX_BYTES);
  const { text, title } = pageText(body.text, type || 'text/plain');
  const max = input.config.maxContentTokens
    ? Math.min(input.config.maxContentTokens * CHARS_PER_TOKEN, WEB_FETCH_MAX_CHARS)
    : WEB_FETCH_DEFAULT_CHARS;
  const head = [`URL: ${url.href}`, ...(title ? [`Title: ${title}`] : []), `Content-Type: ${type || 'unknown'}`];
  if (body.cut) head.push(`[only the first ${WEB_FETCH_MAX_BYTES} bytes of the response were read]`);
  return { output: `${head.join('\n')}\n\n${capOutput(text.trim(), max)}`, isError: false };
}

/** The web tools activities of a tools worker (queue `tools`). */
export function createWebActivities(deps: { egress: EgressGate }) {
  return {
    async webFetch(input: WebFetchActivityInput): Promise<WebFetchActivityOutput> {
      let signal: AbortSignal | undefined;
      try {
        signal = Context.current().cancellationSignal;
      } catch {
        signal = undefined;
      }
      return webFetch(deps.egress, input, signal);
    },
  };
}

export type WebActivities = ReturnType<typeof createWebActivities>;
