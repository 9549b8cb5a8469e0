// The API's own response types, inferred from the zod schemas its routes serialize with, are assignable to the
// SDK's: ts-jest compiles this file with diagnostics on (and `npm run typecheck` compiles it too), so a schema that
// drifts from the SDK's declarations fails here before any request is made.
import type { z } from 'zod';
import type { PageCursorResponse } from '@anthropic-ai/sdk/core/pagination';
import type { BetaManagedAgentsAgent } from '@anthropic-ai/sdk/resources/beta/agents/agents';
import type {
  BetaEnvironment,
  BetaEnvironmentDeleteResponse,
} from '@anthropic-ai/sdk/resources/beta/environments/environments';
import type {
  BetaManagedAgentsCredential,
  BetaManagedAgentsDeletedCredential,
} from '@anthropic-ai/sdk/resources/beta/vaults/credentials';
import type {
  BetaManagedAgentsDeletedVault,
  BetaManagedAgentsVault,
} from '@anthropic-ai/sdk/resources/beta/vaults/vaults';
import type { BetaManagedAgentsSession } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import type { BetaManagedAgentsSessionEvent } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import type { BetaManagedAgentsSessionResource } from '@anthropic-ai/sdk/resources/beta/sessions/resources';
import type { ErrorResponse } from '@anthropic-ai/sdk/resources/shared';
import type { ApiAgent, AgentSchema } from '../../src/api/agents';
import type { ApiEnvironment } from '../../src/api/environments';
import type { VaultSchema } from '../../src/api/vaults/vaults';
import type { CredentialSchema } from '../../src/api/vaults/vault-credentials';
import type { SessionSchema } from '../../src/api/sessions/sessions';
import type { ApiResource } from '../../src/api/sessions/resources';
import type { ApiSessionEvent, PlatformEvent } from '../../src/api/sessions/projection';
import type { pageSchema } from '../../src/api/shared-fields';

/** Compiles only when `T` is assignable to `U`. */
type Assignable<T extends U, U> = [T, U];
type Page<S extends z.ZodType> = z.infer<ReturnType<typeof pageSchema<S>>>;
type Deleted<T extends string> = { id: string; type: T };

export type Checked = [
  Assignable<ApiAgent, BetaManagedAgentsAgent>,
  Assignable<Page<typeof AgentSchema>, PageCursorResponse<BetaManagedAgentsAgent>>,
  Assignable<ApiEnvironment, BetaEnvironment>,
  Assignable<Deleted<'environment_deleted'>, BetaEnvironmentDeleteResponse>,
  Assignable<z.infer<typeof VaultSchema>, BetaManagedAgentsVault>,
  Assignable<Deleted<'vault_deleted'>, BetaManagedAgentsDeletedVault>,
  Assignable<z.infer<typeof CredentialSchema>, BetaManagedAgentsCredential>,
  Assignable<Deleted<'vault_credential_deleted'>, BetaManagedAgentsDeletedCredential>,
  Assignable<z.infer<typeof SessionSchema>, BetaManagedAgentsSession>,
  Assignable<ApiResource, BetaManagedAgentsSessionResource>,
  Assignable<Exclude<ApiSessionEvent, PlatformEvent>, BetaManagedAgentsSessionEvent>,
  Assignable<
    { type: 'error'; error: { type: 'invalid_request_error'; message: string }; request_id: string },
    ErrorResponse
  >,
];

it('compiles the assignability of every response type to the SDK’s (the check is the compile)', () => {
  const checked: Checked['length'] = 12;
  expect(checked).toBe(12);
});
