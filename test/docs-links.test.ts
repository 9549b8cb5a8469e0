// The docs hold together: relative links and anchors resolve, the agent-file examples parse, the README stays short and shows real commands.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { AgentSchema, formatIssues } from '../src/session/agent';

const ROOT = path.join(__dirname, '..');

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(rel);
    return e.name.endsWith('.md') ? [rel] : [];
  });
}
const FILES = ['README.md', 'bench/README.md', ...markdownFiles('docs')];

/** Text outside fenced code blocks and inline code, where a `[x](y)` is a link. */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

it.each(FILES)('every relative link in %s names an existing file and heading', (file) => {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const broken: string[] = [];
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [file0, anchor] = target.split('#');
    const resolved = file0 ? path.join(path.dirname(path.join(ROOT, file)), file0) : path.join(ROOT, file);
    if (!fs.existsSync(resolved)) broken.push(`${target} (no such file)`);
    else if (
      anchor !== undefined &&
      resolved.endsWith('.md') &&
      !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)
    )
      broken.push(`${target} (no such heading)`);
  }
  expect(broken).toEqual([]);
});

it('keeps the README under 12 KB', () => {
  expect(fs.statSync(path.join(ROOT, 'README.md')).size).toBeLessThan(12 * 1024);
});

it('gives agent-file examples that parse against the agent schema', () => {
  const text = fs.readFileSync(path.join(ROOT, 'docs/guide/agent-file.md'), 'utf8');
  const examples = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  expect(examples.length).toBeGreaterThan(0);
  for (const example of examples) {
    const parsed = AgentSchema.safeParse(YAML.parse(example));
    expect(parsed.success ? 'ok' : formatIssues(parsed.error)).toBe('ok');
  }
});

it('shows in the README only commands the CLI has', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const shown = [...readme.matchAll(/npx agents ([a-z-]+)/g)].map((m) => m[1]);
  expect(shown.length).toBeGreaterThanOrEqual(5);
  for (const name of shown)
    expect(fs.readFileSync(path.join(ROOT, 'docs/reference/cli.md'), 'utf8')).toMatch(
      new RegExp(`^## agents ${name}\\n`, 'm'),
    );
});
