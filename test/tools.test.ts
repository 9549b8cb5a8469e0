// The tool registry: one definition per kind, consistent with the lists the agent file accepts.
import { BUILTIN_TOOLS, SANDBOX_TOOLS, TOOL_KINDS, TOOL_SPECS, toolSummary } from '../src/tools/registry';
import { inputJsonSchema } from '../src/tools/kind';
import { TOOL_RUNNERS } from '../src/hands/tool-runners';

describe('the tool registry', () => {
  it('defines every kind the agent file accepts once, under its own name, running where its list says', () => {
    expect(Object.keys(TOOL_KINDS).sort()).toEqual([...BUILTIN_TOOLS, ...SANDBOX_TOOLS].sort());
    for (const [name, kind] of Object.entries(TOOL_KINDS)) {
      expect(kind.kind).toBe(name);
      expect(kind.spec.name).toBe(name);
      expect(TOOL_SPECS[name as keyof typeof TOOL_SPECS]).toBe(kind.spec);
      expect(kind.runs).toBe((SANDBOX_TOOLS as readonly string[]).includes(name) ? 'sandbox' : 'workflow');
    }
    expect(Object.entries(TOOL_KINDS).filter(([, k]) => k.needsRepo).map(([n]) => n)).toEqual(['git_push', 'git_pull']);
    expect(Object.keys(TOOL_RUNNERS).sort()).toEqual([...SANDBOX_TOOLS].sort());
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
    expect(TOOL_SPECS.session_events.input_schema.properties.limit).toEqual({ default: 50, type: 'integer', minimum: 1, maximum: 200, description: 'how many events to return' });
  });

  it('names each call in one summary line by its model-facing name', () => {
    expect(toolSummary('bash', 'bash', { command: 'npm test\nnpm run lint' })).toBe('bash: npm test');
    expect(toolSummary('edit', 'str_replace_based_edit_tool', { command: 'view', path: 'src/a.ts' })).toBe('edit: view src/a.ts');
    expect(toolSummary('push', 'git_push', { branch: 'main' })).toBe('push');
    expect(toolSummary('x', 'no_such_kind', {})).toBe('x');
    expect(toolSummary('bash', 'bash', { command: 'x'.repeat(200) })).toHaveLength(80);
    expect(toolSummary('read', 'read', { file_path: 'src/a.ts', view_range: [1, 9] })).toBe('read: src/a.ts');
    expect(toolSummary('write', 'write', { file_path: 'src/a.ts', content: 'x\ny' })).toBe('write: src/a.ts');
    expect(toolSummary('edit', 'edit', { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' })).toBe('edit: src/a.ts');
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
    expect(TOOL_KINDS.edit.input.safeParse({ file_path: 'a', old_string: 'x', new_string: '', replace_all: true }).success).toBe(true);
    expect(TOOL_KINDS.glob.input.safeParse({ pattern: '{src,..}/*' }).success).toBe(false);
    expect(TOOL_KINDS.grep.input.safeParse({ pattern: 'a', path: 'src', glob: '*.ts' }).success).toBe(false);
    expect(TOOL_KINDS.shell.input.safeParse({ restart: true }).success).toBe(true);
    expect(TOOL_KINDS.shell.input.safeParse({ command: 'ls', timeout_ms: 0 }).success).toBe(true);
    expect(TOOL_KINDS.shell.input.safeParse({ timeout_ms: 5000 }).success).toBe(false);
  });
});
