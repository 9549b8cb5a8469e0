// The tool registry: one definition per kind, consistent with the lists the agent file accepts.
import { BUILTIN_TOOLS, SANDBOX_TOOLS, TOOL_KINDS, TOOL_SPECS, toolSummary } from '../src/tools/registry';
import { spawnSync } from 'node:child_process';
import { z } from 'zod';
import { defineTool, field, inputJsonSchema, oneLine } from '../src/tools/kind';
import { SANDBOX_TOOLS as SANDBOX_KINDS, toolKind } from '../src/tools/registry';
import { TOOL_RUNNERS, sandboxRunner, type RunContext } from '../src/hands/tool-runners';
import type { ExecuteInput } from '../src/hands/hands-contract';

describe('the tool registry', () => {
  it('defines every kind the agent file accepts once, under its own name, running where its list says', () => {
    expect(Object.keys(TOOL_KINDS).sort()).toEqual([...BUILTIN_TOOLS, ...SANDBOX_TOOLS].sort());
    for (const [name, kind] of Object.entries(TOOL_KINDS)) {
      expect(kind.kind).toBe(name);
      expect(kind.spec.name).toBe(name);
      expect(TOOL_SPECS[name as keyof typeof TOOL_SPECS]).toBe(kind.spec);
      expect(kind.runs).toBe((SANDBOX_TOOLS as readonly string[]).includes(name) ? 'sandbox' : 'workflow');
    }
    expect(
      Object.entries(TOOL_KINDS)
        .filter(([, k]) => k.needsRepo)
        .map(([n]) => n),
    ).toEqual(['git_push', 'git_pull']);
    // Each sandbox kind runs by its own exec or by its TOOL_RUNNERS entry, never both.
    const withExec = SANDBOX_TOOLS.filter((k) => toolKind(k)?.exec);
    expect(Object.keys(TOOL_RUNNERS).sort()).toEqual(SANDBOX_TOOLS.filter((k) => !withExec.includes(k)).sort());
  });

  it('offers each kind the JSON schema of the zod schema its calls are parsed with', () => {
    for (const kind of Object.values(TOOL_KINDS)) {
      expect(kind.spec.input_schema).toEqual(inputJsonSchema(kind.input));
      expect(JSON.stringify(kind.spec.input_schema)).not.toMatch(/\$schema|9007199254740991/);
    }
    // The shapes of Anthropic's bash and text editor tools.
    const bash = TOOL_SPECS.bash.input_schema;
    expect(Object.keys(bash.properties)).toEqual(['command', 'restart']);
    expect(bash.properties.command).toMatchObject({ type: 'string', description: 'the bash command to run' });
    expect(bash.required).toBeUndefined();
    const editor = TOOL_SPECS.str_replace_based_edit_tool.input_schema;
    expect(editor.required).toEqual(['command', 'path']);
    expect(editor.properties.command).toEqual({ type: 'string', enum: ['view', 'create', 'str_replace', 'insert'] });
    expect(editor.properties.insert_line).toEqual({ type: 'integer', minimum: 0 });
    expect(editor.properties.view_range).toMatchObject({ type: 'array', minItems: 2, maxItems: 2 });
    // What the spec says is what the parse takes: an integer timeout, no force for a pull.
    expect(TOOL_SPECS.shell.input_schema.properties.timeout_ms).toMatchObject({ type: 'integer', minimum: 0 });
    expect(TOOL_KINDS.shell.input.safeParse({ command: 'ls', timeout_ms: 1.5 }).success).toBe(false);
    expect(Object.keys(TOOL_SPECS.git_pull.input_schema.properties)).toEqual(['branch']);
    expect(TOOL_KINDS.git_pull.input.safeParse({ force: true }).success).toBe(false);
    expect(TOOL_SPECS.session_events.input_schema.properties.limit).toEqual({
      default: 50,
      type: 'integer',
      minimum: 1,
      maximum: 200,
      description: 'how many events to return',
    });
  });

  it('names each call in one summary line by its model-facing name', () => {
    expect(toolSummary('bash', 'bash', { command: 'npm test\nnpm run lint' })).toBe('bash: npm test');
    expect(toolSummary('edit', 'str_replace_based_edit_tool', { command: 'view', path: 'src/a.ts' })).toBe(
      'edit: view src/a.ts',
    );
    expect(toolSummary('push', 'git_push', { branch: 'main' })).toBe('push');
    expect(toolSummary('x', 'no_such_kind', {})).toBe('x');
    expect(toolSummary('bash', 'bash', { command: 'x'.repeat(200) })).toHaveLength(80);
    expect(toolSummary('read', 'read', { file_path: 'src/a.ts', view_range: [1, 9] })).toBe('read: src/a.ts');
    expect(toolSummary('write', 'write', { file_path: 'src/a.ts', content: 'x\ny' })).toBe('write: src/a.ts');
    expect(toolSummary('edit', 'edit', { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' })).toBe(
      'edit: src/a.ts',
    );
    expect(toolSummary('glob', 'glob', { pattern: '**/*.ts' })).toBe('glob: **/*.ts');
    expect(toolSummary('grep', 'grep', { pattern: 'TODO', path: 'src' })).toBe('grep: TODO in src');
    expect(toolSummary('bash', 'shell', { command: 'cd src && npm test' })).toBe('bash: cd src && npm test');
    expect(toolSummary('bash', 'shell', { restart: true })).toBe('bash: restart');
  });

  it('parses a call with its kind schema, refusing what the model-facing spec does not allow', () => {
    expect(TOOL_KINDS.bash.input.safeParse({ command: 'ls' }).success).toBe(true);
    expect(TOOL_KINDS.bash.input.safeParse({}).success).toBe(false);
    expect(TOOL_KINDS.git_push.input.safeParse({ branch: '--upload-pack=x' }).success).toBe(false);
    expect(TOOL_KINDS.session_events.input.safeParse({ limit: 201 }).success).toBe(false);
    expect(TOOL_KINDS.read.input.safeParse({ file_path: 'a', view_range: [3, 0] }).success).toBe(true);
    expect(TOOL_KINDS.read.input.safeParse({ file_path: 'a', view_range: [3, 2] }).success).toBe(false);
    expect(TOOL_KINDS.read.input.safeParse({ file_path: 'a', view_range: [1] }).success).toBe(false);
    expect(TOOL_KINDS.write.input.safeParse({ file_path: 'a\0b', content: '' }).success).toBe(false);
    expect(
      TOOL_KINDS.edit.input.safeParse({ file_path: 'a', old_string: 'x', new_string: '', replace_all: true }).success,
    ).toBe(true);
    expect(TOOL_KINDS.glob.input.safeParse({ pattern: '{src,..}/*' }).success).toBe(false);
    expect(TOOL_KINDS.grep.input.safeParse({ pattern: 'a', path: 'src', glob: '*.ts' }).success).toBe(false);
    expect(TOOL_KINDS.shell.input.safeParse({ restart: true }).success).toBe(true);
    expect(TOOL_KINDS.shell.input.safeParse({ command: 'ls', timeout_ms: 0 }).success).toBe(true);
    expect(TOOL_KINDS.shell.input.safeParse({ timeout_ms: 5000 }).success).toBe(false);
  });
});

// A sandbox kind that says how it runs in its own file: this one, `ls`, is offered to no agent; it shows the shape.
const LsInputSchema = z
  .object({ path: z.string().min(1).describe('the directory to list (default: the workspace directory)').optional() })
  .strict();
const ls = defineTool({
  kind: 'ls',
  runs: 'sandbox',
  input: LsInputSchema,
  exec: (input) => ({ script: 'ls -1A -- "${MA_PATH:-.}"', env: { MA_PATH: input.path ?? '' } }),
  summary: (name, input) => oneLine(`${name}: ${field(input, 'path') ?? '.'}`),
  description: 'Lists the entries of a directory in your sandbox, one a line.',
});

/** A run context whose streamed commands run in a local bash, as the sandbox's would; it keeps what it was asked. */
function localContext(call: Partial<ExecuteInput> = {}) {
  const asked: Parameters<RunContext['streamed']>[0][] = [];
  const ctx: RunContext = {
    call: { sandboxId: 'sb', toolUseId: 'toolu_1', tool: 'bash', input: {}, timeoutSeconds: 30, ...call },
    async streamed(req) {
      asked.push(req);
      const r = spawnSync('bash', ['--norc', '-c', req.script], {
        env: { PATH: process.env.PATH, ...req.env },
        input: req.stdin,
        encoding: 'utf8',
        timeout: req.timeoutSeconds * 1000,
      });
      const output = `${r.stdout}${r.stderr}`;
      return { output, exitCode: r.status ?? 1, timedOut: false, outputBytes: output.length, replayed: false };
    },
    python: () => Promise.reject(new Error('not used')),
    git: () => Promise.reject(new Error('not used')),
  };
  return { ctx, asked };
}

describe('a sandbox kind that declares its exec', () => {
  it('is typed with its exec, and the hands resolve its runner from it, without a TOOL_RUNNERS entry', () => {
    const script: string = ls.exec({ path: 'src' }).script;
    expect(script).toContain('MA_PATH');
    expect(Object.hasOwn(TOOL_RUNNERS, 'ls')).toBe(false);
    expect(sandboxRunner(ls)).toBeInstanceOf(Function);
    // Kinds without exec resolve to their entry; a workflow kind or no kind resolves to none: there is no catch-all.
    expect(sandboxRunner(toolKind('bash'))).toBe(TOOL_RUNNERS.bash);
    expect(sandboxRunner(toolKind('read'))).toBe(TOOL_RUNNERS.read);
    expect(sandboxRunner(toolKind('session_events'))).toBeUndefined();
    expect(sandboxRunner(toolKind('no_such_kind'))).toBeUndefined();
    expect(sandboxRunner({ ...ls, kind: 'unlisted', exec: undefined })).toBeUndefined();
    expect(SANDBOX_KINDS).not.toContain('ls');
  });

  it('runs its command as bash runs one: streamed once, within the call timeout, then [exit N]', async () => {
    const dir = spawnSync('mktemp', ['-d'], { encoding: 'utf8' }).stdout.trim();
    spawnSync('bash', ['-c', 'touch "$0/a.txt" "$0/b.txt"', dir]);
    const { ctx, asked } = localContext();
    const runner = sandboxRunner(ls)!;
    const listed = await runner(ctx, LsInputSchema.parse({ path: dir }));
    expect(listed).toEqual({ output: 'a.txt\nb.txt\n[exit 0]', isError: false });
    expect(asked).toEqual([{ script: ls.exec({}).script, env: { MA_PATH: dir }, timeoutSeconds: 30 }]);
    const missing = await runner(ctx, { path: `${dir}/none` });
    expect(missing.isError).toBe(true);
    expect(missing.output).toMatch(/No such file or directory\n\[exit 2\]$/);
    spawnSync('rm', ['-r', dir]);
  });

  it('passes stdin and env through, and bash itself runs by the same path', async () => {
    const cat = defineTool({
      kind: 'cat_stdin',
      runs: 'sandbox',
      input: z.object({ text: z.string() }),
      exec: (input) => ({ script: 'printf "%s:" "$MA_TAG"; cat', env: { MA_TAG: 't' }, stdin: input.text }),
      summary: (name) => name,
      description: 'Echoes its input.',
    });
    const { ctx, asked } = localContext({ timeoutSeconds: 5 });
    expect(await sandboxRunner(cat)!(ctx, { text: 'héllo' })).toEqual({ output: 't:héllo\n[exit 0]', isError: false });
    expect(asked[0].stdin).toEqual(Buffer.from('héllo'));
    expect(await sandboxRunner(toolKind('bash'))!(ctx, { command: 'echo hi; exit 3' })).toEqual({
      output: 'hi\n[exit 3]',
      isError: true,
    });
    expect(asked[1]).toEqual({ script: 'echo hi; exit 3', timeoutSeconds: 5 });
  });
});
