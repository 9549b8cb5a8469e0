// The schema, as an ordered list of migrations. Append a new one; never edit one that has shipped.
export interface Migration {
  version: number;
  name: string;
  up: string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'workspaces, keys, agents, environments, vaults, credentials, sessions',
    up: [
      `create table workspaces (
        id text primary key,
        name text not null unique,
        created_at timestamptz not null default now()
      )`,
      // Sessions started from the command line belong here.
      `insert into workspaces (id, name) values ('wrkspc_default', 'default')`,
      // Only a key's SHA-256 is kept; `hint` is its first characters, enough to tell keys apart in a list.
      `create table api_keys (
        id text primary key,
        workspace_id text not null references workspaces (id),
        hash text not null unique,
        hint text not null,
        created_at timestamptz not null default now(),
        revoked_at timestamptz
      )`,
      `create table agents (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        version integer not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz
      )`,
      `create index agents_list on agents (workspace_id, pos)`,
      // One row per version, never updated: a version is immutable once written.
      `create table agent_versions (
        agent_id text not null references agents (id),
        version integer not null,
        body jsonb not null,
        created_at timestamptz not null,
        primary key (agent_id, version)
      )`,
      `create table environments (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        name text not null,
        description text,
        config jsonb not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz,
        unique (workspace_id, name)
      )`,
      `create index environments_list on environments (workspace_id, pos)`,
      `create table vaults (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        display_name text not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz
      )`,
      `create index vaults_list on vaults (workspace_id, pos)`,
      // `auth` holds only what may be shown (type, server URL, refresh settings); `sealed` maps each secret field
      // (token, access_token, refresh_token, client_secret) to a box sealed to the vault public key, which only hands
      // and tools workers can open. One box per field lets an update replace one secret without reading the others.
      `create table credentials (
        id text primary key,
        workspace_id text not null references workspaces (id),
        vault_id text not null references vaults (id),
        pos integer generated always as identity,
        display_name text,
        auth jsonb not null,
        sealed jsonb not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz
      )`,
      `create index credentials_list on credentials (vault_id, pos)`,
      `create index credentials_by_url on credentials (workspace_id, (auth->>'mcp_server_url'))`,
      // The session index: what the API knows of a session beyond its log (which lives in Temporal and the archive).
      `create table sessions (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        agent_id text references agents (id),
        agent_version integer,
        environment_id text references environments (id),
        title text,
        metadata jsonb not null default '{}',
        vault_ids jsonb not null default '[]',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz,
        deleted_at timestamptz
      )`,
      `create index sessions_list on sessions (workspace_id, pos)`,
    ],
  },
  {
    version: 2,
    name: 'session resources',
    up: [
      // A session's github_repository resources. `sealed_token` is the authorization_token sealed to the vault public
      // key (bound to the resource and its session), so only hands hosts can open it.
      `create table session_resources (
        id text primary key,
        session_id text not null references sessions (id),
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        type text not null,
        url text not null,
        mount_path text not null,
        checkout jsonb,
        sealed_token text,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`,
      `create index session_resources_list on session_resources (session_id, pos)`,
    ],
  },
  // The vault: named secrets (`agents vault`, `vault:<name>` references) when DATABASE_URL is set, sealed under
  // VAULT_KEY exactly as the file vault seals them (AES-256-GCM, vault and name bound in). Updates lock the row.
  {
    version: 3,
    name: 'vault secrets',
    up: [
      `create table vault_secrets (
        vault text not null,
        name text not null,
        iv text not null,
        data text not null,
        tag text not null,
        updated_at timestamptz not null default now(),
        primary key (vault, name)
      )`,
    ],
  },
  {
    version: 4,
    name: 'session archive',
    up: [
      // Sealed segments of session logs (src/archive/postgres-archive.ts): written once, never updated, never overlapping.
      // An `events` row's payload is one Temporal payload encoded by the history's codec (encrypted under CODEC_KEY);
      // a `link` row (a fork) names the session whose events [0, through_seq] it shares, and has no payload.
      `create table archive_segments (
        session_id text not null,
        from_seq bigint not null,
        through_seq bigint not null,
        kind text not null check (kind in ('events', 'link')),
        link_session_id text,
        payload bytea,
        sealed_at timestamptz not null default now(),
        primary key (session_id, from_seq),
        check (through_seq >= from_seq),
        check ((kind = 'events') = (payload is not null and link_session_id is null))
      )`,
    ],
  },
  {
    version: 5,
    name: 'quotas and the audit trail',
    up: [
      // When a session was seen to have ended (its workflow closed); archived and deleted sessions count as ended too.
      // The concurrent-session quota counts the rest (src/api/quotas.ts).
      `alter table sessions add column ended_at timestamptz`,
      `create index sessions_open on sessions (workspace_id) where ended_at is null and archived_at is null and deleted_at is null`,
      // One row per running sandbox held against its workspace's SANDBOX_QUOTA (src/hands/sandbox-quota.ts).
      // `sandbox_id` is null while the sandbox is being provisioned.
      `create table sandbox_leases (
        id text primary key,
        workspace_id text not null,
        session_id text not null,
        name text not null,
        sandbox_id text unique,
        host_id text not null,
        acquired_at timestamptz not null default now()
      )`,
      `create index sandbox_leases_by_workspace on sandbox_leases (workspace_id)`,
      // Who changed what, and when: ids and names of things only, never a request body, a token or a secret.
      // `api_key_id` is null for the operator's own commands (agents api-keys).
      `create table audit_log (
        seq bigint generated always as identity primary key,
        at timestamptz not null default now(),
        workspace_id text not null,
        api_key_id text,
        action text not null,
        resource_type text not null,
        resource_id text not null,
        parent_id text,
        request_id text
      )`,
      `create index audit_log_by_workspace on audit_log (workspace_id, seq)`,
    ],
  },
  {
    version: 6,
    name: 'blobs',
    up: [
      // Content kept for files, skills and memories (src/storage/blobs.ts): a blob row, and its chunks, each chunk one
      // payload sealed by the history's codec. `size_bytes`, `sha256` and `chunks` are set when the last chunk is in.
      `create table blobs (
        id text primary key,
        workspace_id text not null,
        size_bytes bigint not null,
        sha256 text not null,
        chunks integer not null,
        created_at timestamptz not null default now()
      )`,
      `create table blob_chunks (
        blob_id text not null references blobs (id) on delete cascade,
        n integer not null,
        data bytea not null,
        primary key (blob_id, n)
      )`,
    ],
  },
  {
    version: 7,
    name: 'files',
    up: [
      // The Files API (src/storage/repos/files-repo.ts): an upload (no scope), or a session's output (scoped to the
      // session, one row per path under its outputs directory). Deleting a file removes its row and its blob;
      // \`blob_id\` is null once an expired file's bytes are gone (its metadata stays).
      `create table files (
        id text primary key,
        workspace_id text not null,
        pos integer generated always as identity,
        filename text not null,
        mime_type text not null,
        size_bytes bigint not null,
        sha256 text not null,
        blob_id text,
        scope_session_id text,
        scope_path text,
        downloadable boolean not null,
        expires_at timestamptz,
        created_at timestamptz not null default now()
      )`,
      `create index files_list on files (workspace_id, pos)`,
      `create index files_by_scope on files (scope_session_id, pos) where scope_session_id is not null`,
      `create unique index files_scope_path on files (scope_session_id, scope_path) where scope_session_id is not null`,
      `create index files_expiring on files (workspace_id, expires_at) where expires_at is not null and blob_id is not null`,
    ],
  },
  {
    version: 8,
    name: 'memory stores',
    up: [
      // Memory stores (src/storage/repos/memory-repo.ts): every write to a store's memories locks its row first.
      `create table memory_stores (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        name text not null,
        description text not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz
      )`,
      `create index memory_stores_list on memory_stores (workspace_id, pos)`,
      // A live memory: its path and the version that holds its current content. A deleted memory has no row here;
      // its versions stay. Paths compare byte-wise (collate "C"), so listings sort the same on every host.
      `create table memories (
        id text primary key,
        store_id text not null references memory_stores (id),
        path text collate "C" not null,
        version_id text not null,
        content_sha256 text not null,
        content_size_bytes integer not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (store_id, path)
      )`,
      // One row per change, never updated but by a redaction (which clears path, hash, size and the blob). A
      // 'deleted' version has no content; `blob_id` names the version's own copy of the content.
      `create table memory_versions (
        id text primary key,
        store_id text not null references memory_stores (id),
        memory_id text not null,
        pos integer generated always as identity,
        operation text not null check (operation in ('created', 'modified', 'deleted')),
        path text,
        blob_id text,
        content_sha256 text,
        content_size_bytes integer,
        created_by jsonb,
        created_at timestamptz not null,
        redacted_at timestamptz,
        redacted_by jsonb
      )`,
      `create index memory_versions_list on memory_versions (store_id, pos)`,
      `create index memory_versions_by_memory on memory_versions (memory_id, pos)`,
    ],
  },
  {
    version: 9,
    name: 'skills',
    up: [
      // Custom skills (src/api/skills/). `name` is the skill's slug, fixed by its first version's SKILL.md.
      `create table skills (
        id text primary key,
        workspace_id text not null references workspaces (id),
        pos integer generated always as identity,
        name text not null,
        display_name text not null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`,
      `create index skills_list on skills (workspace_id, pos)`,
      // One row per version, never updated. `version` is the version's id (epoch microseconds, as a string); the
      // newest is the one of highest `pos`. `bundle_blob_id` is the zip a download returns.
      `create table skill_versions (
        skill_id text not null references skills (id),
        version text not null,
        pos integer generated always as identity,
        name text not null,
        description text not null,
        bundle_blob_id text not null,
        created_at timestamptz not null,
        primary key (skill_id, version)
      )`,
      `create index skill_versions_list on skill_versions (skill_id, pos)`,
      // Each file of a version, its content one blob; `path` is relative to the skill's directory.
      `create table skill_files (
        skill_id text not null,
        version text not null,
        path text not null,
        blob_id text not null,
        size_bytes bigint not null,
        executable boolean not null,
        primary key (skill_id, version, path),
        foreign key (skill_id, version) references skill_versions (skill_id, version)
      )`,
    ],
  },
  {
    version: 10,
    name: 'session mounts',
    up: [
      // What a session mounts into its sandbox: files, memory stores and skills (src/storage/repos/session-mounts-repo.ts).
      // `ref_id` is the file, store or skill; `name` and `description` are the store's or skill's, snapshotted at attach.
      `create table session_mounts (
        id text primary key,
        session_id text not null,
        workspace_id text not null,
        pos bigint generated always as identity,
        kind text not null check (kind in ('file', 'memory_store', 'skill')),
        ref_id text not null,
        version text,
        mount_path text not null,
        access text not null check (access in ('read_write', 'read_only')),
        instructions text,
        name text,
        description text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        unique (session_id, mount_path)
      )`,
      `create index session_mounts_by_session on session_mounts (session_id, pos)`,
      `create index session_mounts_by_ref on session_mounts (kind, ref_id)`,
      // Bumped by every insert and delete of a session's mounts: the hands host compares it before each tool call.
      `create table session_mount_generations (
        session_id text primary key,
        generation integer not null
      )`,
    ],
  },
  {
    version: 11,
    name: 'self-hosted work queue',
    up: [
      // A self-hosted environment's standing credentials (src/api/environment-keys.ts): only the key's SHA-256 is kept.
      `create table environment_keys (
        id text primary key,
        workspace_id text not null,
        environment_id text not null,
        hash text not null unique,
        hint text not null,
        created_at timestamptz not null default now(),
        revoked_at timestamptz
      )`,
      `create index environment_keys_by_environment on environment_keys (environment_id, created_at)`,
      // The work queue (src/api/environment-work.ts). `claim` counts the claims: a sessions token names the claim it
      // was minted for, so a new claim ends the old one. `lease_expires_at` is null until the claim is acked.
      `create table work_items (
        id text primary key,
        workspace_id text not null,
        environment_id text not null,
        pos bigint generated always as identity,
        data_type text not null check (data_type in ('session', 'healthcheck')),
        data_id text not null,
        state text not null check (state in ('queued', 'starting', 'active', 'stopping', 'stopped')),
        metadata jsonb not null default '{}',
        created_at timestamptz not null default now(),
        polled_at timestamptz,
        worker_id text,
        claim integer not null default 0,
        acknowledged_at timestamptz,
        started_at timestamptz,
        latest_heartbeat_at timestamptz,
        lease_ttl_seconds integer,
        lease_expires_at timestamptz,
        stop_requested_at timestamptz,
        stopped_at timestamptz
      )`,
      `create index work_items_list on work_items (environment_id, pos)`,
      `create index work_items_by_state on work_items (environment_id, state, pos)`,
      // At most one live item a session: enqueueing twice at once inserts one.
      `create unique index work_items_live_session on work_items (data_id)
         where data_type = 'session' and state in ('queued', 'starting', 'active')`,
      // The sessions tokens handed out in work items' secrets, by SHA-256, each for one claim of one item.
      `create table work_tokens (
        hash text primary key,
        work_id text not null,
        claim integer not null,
        created_at timestamptz not null default now()
      )`,
      `create index work_tokens_by_work on work_tokens (work_id)`,
      // Who polls: one row per environment and worker id (Anthropic-Worker-ID), for stats and the console.
      `create table work_pollers (
        environment_id text not null,
        worker_id text not null,
        last_polled_at timestamptz not null,
        primary key (environment_id, worker_id)
      )`,
    ],
  },
  {
    version: 12,
    name: 'session budgets',
    up: [
      // The session's budget in minor units of `budget_currency` (null: none); `budget_removed` once an update removed
      // it, since a removed budget cannot be set again.
      `alter table sessions add column budget_amount integer`,
      `alter table sessions add column budget_currency text`,
      `alter table sessions add column budget_removed boolean not null default false`,
    ],
  },
  {
    version: 13,
    name: 'deployments',
    up: [
      // A deployment: what each of its firings creates a session from. `agent_version` null follows the agent's
      // latest version, resolved at each firing. `schedule_*` null: manual runs only. `paused_reason` null: active.
      // Each deployment has a Temporal Schedule (src/api/deployment-schedules.ts) that holds the same state.
      `create table deployments (
        id text primary key,
        workspace_id text not null references workspaces (id),
        workspace text not null,
        pos integer generated always as identity,
        name text not null,
        description text,
        agent_id text not null,
        agent_version integer,
        environment_id text not null,
        initial_events jsonb not null,
        resources jsonb not null,
        vault_ids jsonb not null,
        metadata jsonb not null,
        budget_amount integer,
        budget_currency text,
        schedule_expression text,
        schedule_timezone text,
        paused_reason jsonb,
        last_run_at timestamptz,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        archived_at timestamptz
      )`,
      `create index deployments_list on deployments (workspace_id, pos)`,
      // One row per firing, written when its workflow starts (state started) and finished once (succeeded with the
      // session it created, or failed with why). A scheduled firing is recorded once per (deployment, scheduled_at).
      `create table deployment_runs (
        id text primary key,
        workspace_id text not null,
        deployment_id text not null references deployments (id),
        pos integer generated always as identity,
        workflow_id text not null unique,
        trigger_type text not null check (trigger_type in ('schedule', 'manual')),
        scheduled_at timestamptz,
        agent_id text not null,
        agent_version integer not null,
        state text not null check (state in ('started', 'succeeded', 'failed')),
        session_id text,
        error_type text,
        error_message text,
        created_at timestamptz not null default now(),
        finished_at timestamptz
      )`,
      `create unique index deployment_runs_scheduled on deployment_runs (deployment_id, scheduled_at)
         where trigger_type = 'schedule'`,
      `create index deployment_runs_list on deployment_runs (workspace_id, pos)`,
      `alter table sessions add column deployment_id text`,
      `create index sessions_by_deployment on sessions (deployment_id) where deployment_id is not null`,
    ],
  },
  {
    version: 14,
    name: 'webhooks',
    up: [
      // Webhook endpoints (src/webhooks/): `event_types` null means every type; the signing secret is a sealed box to
      // the vault public key (src/vault/sealed.ts), opened only by the tools workers that sign deliveries.
      `create table webhook_endpoints (
        id text primary key,
        workspace_id text not null,
        pos bigint generated always as identity,
        url text not null,
        event_types jsonb,
        secret_sealed text not null,
        consecutive_failures integer not null default 0,
        disabled_at timestamptz,
        disabled_reason text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`,
      `create index webhook_endpoints_list on webhook_endpoints (workspace_id, pos)`,
      // The outbox: one row per event, written in the transaction of the change it reports. `relayed_at` is set once
      // a delivery workflow has been started for every endpoint it goes to.
      `create table webhook_events (
        id text primary key,
        workspace_id text not null,
        pos bigint generated always as identity,
        type text not null,
        payload jsonb not null,
        created_at timestamptz not null default now(),
        relayed_at timestamptz
      )`,
      `create index webhook_events_unrelayed on webhook_events (pos) where relayed_at is null`,
      // Every delivery attempt: the HTTP status, or why nothing was sent (a refusal, a connection error).
      `create table webhook_attempts (
        id bigint generated always as identity primary key,
        endpoint_id text not null,
        event_id text not null,
        event_type text not null,
        attempt integer not null,
        at timestamptz not null default now(),
        status_code integer,
        outcome text not null check (outcome in ('delivered', 'failed', 'refused')),
        error text
      )`,
      `create index webhook_attempts_by_endpoint on webhook_attempts (endpoint_id, id)`,
    ],
  },
  {
    version: 15,
    name: 'session-agent',
    up: [
      // The agent a session runs when it is not its agent version as stored: one created with agent_with_overrides,
      // or one whose tools or MCP servers an update replaced. Null: the agent version itself.
      `alter table sessions add column agent_config jsonb`,
    ],
  },
  {
    version: 16,
    name: 'workspace-snapshots',
    up: [
      // A sandbox's workspace as captured after a tool call that changed it (src/hands/workspace-snapshots.ts):
      // the manifest (paths, modes, sizes, chunk hashes) is sealed by the payload codec; the counts are clear.
      `create table workspace_snapshots (
        id text primary key,
        workspace_id text not null,
        session_id text not null,
        sandbox_name text not null,
        seq integer not null,
        created_at timestamptz not null default now(),
        files integer not null,
        size_bytes bigint not null,
        chunk_count integer not null,
        new_chunks integer not null,
        new_bytes bigint not null,
        manifest bytea not null,
        unique (session_id, sandbox_name, seq)
      )`,
      `create index workspace_snapshots_by_workspace on workspace_snapshots (workspace_id)`,
      // Content-addressed chunks of workspace files, per workspace (no chunk is shared between tenants), sealed.
      `create table snapshot_chunks (
        workspace_id text not null,
        hash text not null,
        size_bytes integer not null,
        data bytea not null,
        primary key (workspace_id, hash)
      )`,
      // Which chunks each snapshot uses: a chunk no snapshot uses any more is deleted with the last one.
      `create table snapshot_chunk_refs (
        snapshot_id text not null,
        workspace_id text not null,
        hash text not null,
        primary key (snapshot_id, hash)
      )`,
      `create index snapshot_chunk_refs_by_hash on snapshot_chunk_refs (workspace_id, hash)`,
    ],
  },
  {
    version: 17,
    name: 'webhook-announcements',
    up: [
      // A workspace whose webhook endpoints changed after `announced_at`: its open sessions are still to be told
      // whether their status changes now go to the outbox (src/webhooks/status-announce.ts).
      `create table webhook_announcements (
        workspace_id text primary key,
        changed_at timestamptz not null,
        announced_at timestamptz
      )`,
    ],
  },
  {
    version: 18,
    name: 'sandbox-homes',
    up: [
      // The home directory of a sandbox paused while idle (src/hands/sandbox-home.ts): a tar without ~/.cache, in
      // chunks sealed by the payload codec, one per sandbox of a session, replaced at each pause.
      `create table sandbox_homes (
        session_id text not null,
        sandbox_name text not null,
        size_bytes bigint not null,
        chunks integer not null,
        created_at timestamptz not null default now(),
        primary key (session_id, sandbox_name)
      )`,
      `create table sandbox_home_chunks (
        session_id text not null,
        sandbox_name text not null,
        n integer not null,
        data bytea not null,
        primary key (session_id, sandbox_name, n)
      )`,
    ],
  },
];
