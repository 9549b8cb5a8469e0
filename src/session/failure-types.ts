// Every failure type the platform raises, by family: the `type` of an ApplicationFailure, which callers, retry
// policies and the API's error mapping match on (never the message). A new failure gets its name here.
import { ApplicationFailure } from '@temporalio/common';

export const Failure = {
  Approval: {
    AlreadyDecided: 'ApprovalError.AlreadyDecided',
    Invalid: 'ApprovalError.Invalid',
    NotPending: 'ApprovalError.NotPending',
    Unknown: 'ApprovalError.Unknown',
  },
  Archive: {
    Incomplete: 'ArchiveError.Incomplete',
    Stale: 'ArchiveError.Stale',
  },
  ClientTool: {
    AlreadyAnswered: 'ClientToolError.AlreadyAnswered',
    Invalid: 'ClientToolError.Invalid',
    NotApproved: 'ClientToolError.NotApproved',
    NotClientTool: 'ClientToolError.NotClientTool',
    Unknown: 'ClientToolError.Unknown',
  },
  Codec: {
    Corrupt: 'CodecError.Corrupt',
    UnknownKey: 'CodecError.UnknownKey',
  },
  Deployment: {
    NoDatabase: 'DeploymentError.NoDatabase',
    UnknownRun: 'DeploymentError.UnknownRun',
  },
  Files: {
    BadPath: 'FilesError.BadPath',
    Get: 'FilesError.Get',
    Invalid: 'FilesError.Invalid',
    Put: 'FilesError.Put',
    Read: 'FilesError.Read',
    TooLarge: 'FilesError.TooLarge',
    UnknownSandbox: 'FilesError.UnknownSandbox',
    Write: 'FilesError.Write',
  },
  Handoff: {
    Invalid: 'HandoffError.Invalid',
    Refused: 'HandoffError.Refused',
  },
  Mcp: {
    Credential: 'McpError.Credential',
    InvalidResult: 'McpError.InvalidResult',
    Rejected: 'McpError.Rejected',
    Timeout: 'McpError.Timeout',
    Unauthorized: 'McpError.Unauthorized',
    Unavailable: 'McpError.Unavailable',
  },
  Model: {
    Authentication: 'ModelError.Authentication',
    Connection: 'ModelError.Connection',
    InvalidOutput: 'ModelError.InvalidOutput',
    InvalidRequest: 'ModelError.InvalidRequest',
    NotFound: 'ModelError.NotFound',
    Overloaded: 'ModelError.Overloaded',
    PermissionDenied: 'ModelError.PermissionDenied',
    RateLimited: 'ModelError.RateLimited',
    RequestTooLarge: 'ModelError.RequestTooLarge',
    Server: 'ModelError.Server',
    Stream: 'ModelError.Stream',
    Timeout: 'ModelError.Timeout',
    /** A model call's tool spec reference that the worker's code does not know (a worker older than the run). */
    UnknownToolRef: 'ModelError.UnknownToolRef',
  },
  Outcome: {
    Active: 'OutcomeError.Active',
    Invalid: 'OutcomeError.Invalid',
    Refused: 'OutcomeError.Refused',
  },
  Sandbox: {
    Denied: 'SandboxError.Denied',
    Lost: 'SandboxError.Lost',
    NoRegistry: 'SandboxError.NoRegistry',
    Provision: 'SandboxError.Provision',
    Quota: 'SandboxError.Quota',
    Runtime: 'SandboxError.Runtime',
    SetupFailed: 'SandboxError.SetupFailed',
  },
  Session: {
    BudgetNotRaised: 'SessionError.BudgetNotRaised',
    BudgetUntracked: 'SessionError.BudgetUntracked',
    Ended: 'SessionError.Ended',
    InvalidInput: 'SessionError.InvalidInput',
    InvalidMessage: 'SessionError.InvalidMessage',
    InvalidQuery: 'SessionError.InvalidQuery',
    /** A change that needs the session idle (an update of its agent's tools) while it runs. */
    NotIdle: 'SessionError.NotIdle',
    RunAheadOfHistory: 'SessionError.RunAheadOfHistory',
  },
  Vault: {
    Missing: 'VaultError.Missing',
    Unavailable: 'VaultError.Unavailable',
  },
  Worker: {
    Lost: 'WorkerError.Lost',
  },
} as const;

type Values<T> = T[keyof T];
/** One of the failure types above. */
export type FailureType = Values<{ [F in keyof typeof Failure]: Values<(typeof Failure)[F]> }>;

/** A refusal no retry can change: bad input, a rule, a state that forbids it. */
export function refusal(message: string, type: FailureType): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}
