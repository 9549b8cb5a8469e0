// Approval policies and the agent file's clientTools, policies and harness fields: pure, no server.
import { AgentSchema, formatIssues } from '../src/session/agent';
import { evaluatePolicy, matchesPattern, ToolPolicySchema } from '../src/session/policy';

const agent = (extra: Record<string, unknown>) => AgentSchema.safeParse({ model: 'm', ...extra });
const problems = (extra: Record<string, unknown>) => {
  const r = agent(extra);
  return r.success ? '' : formatIssues(r.error);
};

describe('policy patterns', () => {
  it('matches globs against the whole subject, * across spaces and slashes', () => {
    expect(matchesPattern('git push*', 'git push origin main')).toBe(true);
    expect(matchesPattern('git push*', 'git push')).toBe(true);
    expect(matchesPattern('git push*', 'cd x && git push')).toBe(false);
    expect(matchesPattern('*git push*', 'cd x && git push')).toBe(true);
    expect(matchesPattern('rm -rf /?*', 'rm -rf /tmp/a')).toBe(true);
    expect(matchesPattern('ls', 'ls -a')).toBe(false);
    expect(matchesPattern('a.b', 'axb')).toBe(false);
  });

  it('matches /regex/flags unanchored, as written', () => {
    expect(matchesPattern('/\\bgit\\s+push\\b/', 'cd x && git  push')).toBe(true);
    expect(matchesPattern('/^GIT PUSH/i', 'git push')).toBe(true);
    expect(matchesPattern('/^ls$/', 'ls -a')).toBe(false);
  });
});

describe('evaluatePolicy', () => {
  const bash = ToolPolicySchema.parse({ default: 'allow', ask: ['git push*'], timeoutSeconds: 60 });
  it('asks for a matching bash command and allows everything else', () => {
    expect(evaluatePolicy('bash', bash, { command: '  git push --force' })).toEqual({
      ask: true,
      rule: 'bash: ask "git push*"',
      timeoutSeconds: 60,
      onTimeout: 'deny',
    });
    expect(evaluatePolicy('bash', bash, { command: 'ls' })).toEqual({
      ask: false,
      rule: 'bash: default allow',
      timeoutSeconds: 60,
      onTimeout: 'deny',
    });
  });

  it('lets an ask pattern win over an allow pattern, and matches a named field or the JSON input', () => {
    const p = ToolPolicySchema.parse({ default: 'ask', allow: ['*'], ask: ['*main*'], field: 'branch' });
    expect(evaluatePolicy('git_push', p, { branch: 'main' }).ask).toBe(true);
    expect(evaluatePolicy('git_push', p, { branch: 'feature' })).toMatchObject({
      ask: false,
      rule: 'git_push: allow "*"',
    });
    const json = ToolPolicySchema.parse({ ask: ['*"title":"delete*'] });
    expect(evaluatePolicy('mcp__t__x', json, { title: 'delete all' }).ask).toBe(true);
  });

  it('reads always_allow, always_ask and no policy', () => {
    expect(evaluatePolicy('x', 'always_ask', {}).ask).toBe(true);
    expect(evaluatePolicy('x', 'always_allow', {}).ask).toBe(false);
    expect(evaluatePolicy('x', undefined, {}).ask).toBe(false);
  });
});

describe('the agent file', () => {
  it('accepts policies for declared, client and MCP tools', () => {
    expect(
      problems({
        clientTools: [{ name: 'ask_user', description: 'asks', input_schema: { type: 'object', properties: {} } }],
        policies: { bash: { ask: ['git push*'] }, ask_user: 'always_ask', mcp__tracker__delete_issue: 'always_ask' },
      }),
    ).toBe('');
  });

  it('names each bad field: unknown tool, bad regex, bad policy, clashing client tool, unknown harness', () => {
    expect(problems({ policies: { curl: 'always_ask' } })).toBe(
      'policies.curl: policy for curl, which is not a declared tool, client tool or mcp__ tool',
    );
    expect(problems({ policies: { bash: { ask: ['/(/'] } } })).toMatch(
      /^policies\.bash\.ask\.0: invalid regular expression \/\(\/: /,
    );
    expect(problems({ policies: { bash: 'sometimes' } })).toMatch(/^policies\.bash: /);
    expect(problems({ clientTools: [{ name: 'bash', description: 'd', input_schema: { type: 'object' } }] })).toBe(
      'clientTools.0.name: tool bash is declared twice',
    );
    expect(problems({ clientTools: [{ name: 'x', description: 'd', input_schema: { type: 'array' } }] })).toMatch(
      /^clientTools\.0\.input_schema\.type: /,
    );
    expect(problems({ harness: 'default@3' })).toBe(
      'harness: unknown harness default@3; this version knows default@1, default@2',
    );
    expect(problems({ harness: 'default' })).toMatch(/^harness: harness is NAME@VERSION/);
  });
});
