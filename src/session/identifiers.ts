// The names and references the platform accepts, as named zod schemas: each rule, and the sentence that explains
// it, in one place for every edge that checks one (agent file, signals and updates, tools, vault, CLI, worker).
import { z } from 'zod';
import { shared } from './shared';

const NAME_100 = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A session (workflow) id, as the handoff tool and handoff update name one. */
export const SessionIdSchema = shared('identifiers.SessionIdSchema', () =>
  z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, 'to is a session id: 1-200 letters, digits, dot, dash or underscore'),
);

/** A secret's name in a vault. */
export const SecretNameSchema = shared('identifiers.SecretNameSchema', () =>
  z.string().regex(NAME_100, 'names are 1-100 letters, digits, dot, dash or underscore'),
);

/** A vault's name, as an agent file names the one its credentials come from. */
export const VaultNameSchema = shared('identifiers.VaultNameSchema', () =>
  z.string().regex(NAME_100, 'vault names are letters, digits, dot, dash or underscore'),
);

/** A credential reference, `vault:<name>`: the agent file and history carry this, never the secret. */
export const VaultRefSchema = shared('identifiers.VaultRefSchema', () =>
  z
    .string()
    .regex(
      /^vault:[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/,
      'credentials are references of the form vault:<name>, never the secret itself',
    ),
);

/** A repository token an API session was created with, `resource:<id>`: sealed in the database, opened by hands hosts. */
export const ResourceRefSchema = shared('identifiers.ResourceRefSchema', () =>
  z.string().regex(/^resource:sesrsc_[A-Za-z0-9_-]{1,120}$/, 'resource references are resource:sesrsc_<id>'),
);

/** What a sandbox's repo authenticates with: a secret of the session's vault, or its API resource's token. */
export const RepoCredentialSchema = shared('identifiers.RepoCredentialSchema', () =>
  z.union([VaultRefSchema, ResourceRefSchema], {
    error: 'credentials are references of the form vault:<name>, never the secret itself',
  }),
);

/** A tool's model-facing name. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const ToolNameSchema = shared('identifiers.ToolNameSchema', () =>
  z.string().regex(TOOL_NAME, 'tool names are 1-64 letters, digits, _ or -'),
);

/** A Temporal task queue (a sub-agent's), or a hands host id, which names its queue `hands.<id>`. */
export const QUEUE_NAME = /^[A-Za-z0-9._-]{1,100}$/;
export const TaskQueueSchema = shared('identifiers.TaskQueueSchema', () =>
  z.string().regex(QUEUE_NAME, 'task queues are letters, digits, dot, dash or underscore'),
);
export const HostIdSchema = shared('identifiers.HostIdSchema', () =>
  z.string().regex(QUEUE_NAME, 'host ids are 1-100 letters, digits, dot, dash or underscore'),
);
