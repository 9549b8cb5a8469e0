// What a session's system prompt says of its mounts: a memory section (each store's directory, access and the
// instructions given when it was attached) and a skills section (each skill's name, directory and description).

export interface PromptMounts {
  stores: readonly {
    mountPath: string;
    access: 'read_write' | 'read_only';
    instructions: string | null;
    name: string;
  }[];
  skills: readonly { name: string; description: string; mountPath: string }[];
}

/** The sections for `m`, or '' when the session mounts no store and no skill. */
export function promptSections(m: PromptMounts): string {
  const sections: string[] = [];
  if (m.stores.length > 0) {
    const lines = [
      '# Memory',
      'Memory stores are mounted as directories of text files. Read what is relevant before you start. In a read_write store, ' +
        'create, edit or delete files to keep what is worth remembering across sessions: changes are saved after each tool ' +
        'call, and a note in the tool result says when one was not. A read_only store cannot be changed.',
    ];
    for (const s of m.stores) {
      lines.push('', `## ${s.mountPath} (${s.access})`, `Store: ${s.name}`);
      if (s.instructions) lines.push(s.instructions);
    }
    sections.push(lines.join('\n'));
  }
  if (m.skills.length > 0) {
    const lines = [
      '# Skills',
      "Skills are directories of instructions and scripts. When a task matches a skill's description, read its SKILL.md " +
        'first and follow it.',
      '',
    ];
    for (const s of m.skills) lines.push(`- ${s.name} (${s.mountPath}): ${s.description}`);
    sections.push(lines.join('\n'));
  }
  return sections.join('\n\n');
}

/** `system` with the sections appended. */
export function withPromptSections(system: string | undefined, m: PromptMounts): string | undefined {
  const sections = promptSections(m);
  if (!sections) return system;
  return system ? `${system}\n\n${sections}` : sections;
}
