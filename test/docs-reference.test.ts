// The reference tables in docs/reference/ are generated from the code and must match it (`npm run docs:reference`).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigSchema, SECRET_VARIABLES } from '../src/config';
import { EVENT_TYPES } from '../src/session/events';
import * as messages from '../src/session/contract';

const ROOT = path.join(__dirname, '..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
// The generator loads the CLI, whose commander is ESM-only, so it runs under tsx rather than in jest.
const docs = JSON.parse(
  execFileSync(TSX, ['scripts/docs-reference.ts', '--print'], { cwd: ROOT, encoding: 'utf8' }),
) as Record<string, string>;
const read = (name: string) => fs.readFileSync(path.join(ROOT, 'docs/reference', name), 'utf8');

it('generates the events, configuration, CLI and messages references', () => {
  expect(Object.keys(docs).sort()).toEqual(
    ['cli.md', 'configuration.md', 'events.md', 'messages.md'].map((f) => `docs/reference/${f}`),
  );
});

it.each(Object.keys(docs))('%s is what the code generates (run `npm run docs:reference` after changing it)', (file) => {
  expect(fs.readFileSync(path.join(ROOT, file), 'utf8')).toBe(docs[file]);
});

it('lists every event type with its fields, the sandbox and sub-agent events included', () => {
  const rows = [...read('events.md').matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
  expect(rows).toEqual(EVENT_TYPES);
  expect(rows).toEqual(
    expect.arrayContaining(['sandbox_handed_off', 'sandbox_received', 'subagent_started', 'subagent_finished']),
  );
  expect(read('events.md')).toContain('| `subagent_finished` | `sessionId`, `toolUseId`, `isError`, `usage? {');
});

it('lists every configuration variable and the file form of every secret', () => {
  const text = read('configuration.md');
  const rows = [...text.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
  expect(rows).toEqual(Object.keys(ConfigSchema.shape));
  for (const s of SECRET_VARIABLES) expect(text).toContain(`\`${s}_FILE\``);
});

it("has a section with its own --help for every command the CLI's help lists", () => {
  const help = execFileSync(TSX, ['src/client.ts', '--help'], { cwd: ROOT, encoding: 'utf8' });
  const commands = [...help.split('\nCommands:\n')[1].matchAll(/^ {2}([a-z-]+) /gm)]
    .map((m) => m[1])
    .filter((c) => c !== 'help');
  expect(commands).toEqual(
    expect.arrayContaining(['start', 'send', 'events', 'watch', 'approve', 'files', 'vault', 'doctor']),
  );
  const text = read('cli.md');
  for (const name of commands)
    expect(text).toMatch(new RegExp(`^## agents ${name}( [a-z]+)?\\n\\n\`\`\`text\\nUsage: agents ${name} `, 'm'));
  expect(text).toContain('  $ agents approve ses-1234 toolu_01A');
});

it('lists every signal, update and query, putFile and getFile included', () => {
  const text = read('messages.md');
  const names = Object.values(messages as Record<string, unknown>)
    .filter(
      (v): v is { type: string; name: string } =>
        typeof v === 'object' &&
        v !== null &&
        'name' in v &&
        ['signal', 'update', 'query'].includes((v as { type?: string }).type ?? ''),
    )
    .map((d) => d.name);
  expect(names).toEqual(
    expect.arrayContaining([
      'userMessage',
      'sendMessage',
      'putFile',
      'getFile',
      'resolveToolUse',
      'submitToolResult',
      'events',
      'status',
    ]),
  );
  for (const n of names) expect(text).toMatch(new RegExp(`^\\| \`${n}\` \\|`, 'm'));
  expect(text).toContain('| `putFile` | `{sandbox? = "main", path, contentBase64}` | `{path, bytes}` |');
});
