// web_fetch: a web page's text, fetched on a tools worker through the egress gate (src/egress/page-fetch.ts). It is
// no tool kind of registry.ts (it runs neither in a sandbox nor in the workflow): an agent offers it when its
// `webFetch` is set, as an API agent's toolset does when web_fetch is enabled.
import { z } from 'zod';
import { inputJsonSchema, type ToolSpec } from './kind';
import { shared } from '../session/shared';

/** The longest URL a call may give. */
export const MAX_WEB_FETCH_URL = 2048;

export const WebFetchInputSchema = shared('web-fetch.WebFetchInputSchema', () =>
  z
    .object({
      url: z
        .string()
        .min(1, 'url must not be empty')
        .max(MAX_WEB_FETCH_URL, `url must be at most ${MAX_WEB_FETCH_URL} characters`)
        .refine((u) => /^https?:\/\//i.test(u), 'url must be an http or https URL')
        .describe('the http(s) URL to fetch'),
    })
    .strict(),
);
export type WebFetchInput = z.infer<typeof WebFetchInputSchema>;

/** A plain hostname such as docs.example.com: no scheme, port or path. */
const DomainSchema = shared('web-fetch.DomainSchema', () =>
  z
    .string()
    .min(1)
    .max(253)
    .regex(
      /^(?=.*[a-z0-9])[a-z0-9.-]+$/i,
      'a domain is a plain hostname such as docs.example.com, with no scheme, port or path',
    ),
);

/** The agent file's `webFetch`: which hosts it may fetch from, and how much of a page's text reaches the model. */
export const WebFetchConfigSchema = shared('web-fetch.WebFetchConfigSchema', () =>
  z
    .object({
      /** Only these hosts and their subdomains. */
      allowedDomains: z.array(DomainSchema).min(1).max(64).optional(),
      /** Never these hosts nor their subdomains. */
      blockedDomains: z.array(DomainSchema).min(1).max(64).optional(),
      /** At most this many tokens of a page's text (about four characters each) per call. */
      maxContentTokens: z.number().int().min(1).max(10_000_000).optional(),
    })
    .strict()
    .refine((c) => !(c.allowedDomains && c.blockedDomains), 'allowedDomains and blockedDomains cannot be combined'),
);
export type WebFetchConfig = z.infer<typeof WebFetchConfigSchema>;

export const webFetchSpec: ToolSpec = shared('web-fetch.webFetchSpec', () => ({
  name: 'web_fetch',
  description:
    'Fetches a web page or text document over http(s) and returns its text (HTML converted to plain text), after a header ' +
    'with its URL, title and content type. Only text content is supported. Private, loopback and platform addresses are ' +
    'refused, as are hosts outside the allowed domains; a refused URL is an error saying why.',
  input_schema: inputJsonSchema(WebFetchInputSchema),
}));
