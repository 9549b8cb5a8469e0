// Who owns each sandbox of a hands host. Container labels are fixed at creation, so a hand-off cannot change
// them: ownership lives here instead, in a small JSON file under the host's DATA_DIR that only this host's
// activities write. Every read goes to the file, so a restarted worker sees the same owners.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PlatformError } from '../session/platform-error';

const EntrySchema = z.object({ owner: z.string(), name: z.string(), since: z.number() }).strict();
const FileSchema = z.record(z.string(), EntrySchema);
export type OwnerEntry = z.infer<typeof EntrySchema>;

export class OwnershipError extends PlatformError {}

export class OwnershipRegistry {
  constructor(readonly file: string) {}

  /** The registry of host `hostId` under a data directory. */
  static forHost(dataDir: string, hostId: string): OwnershipRegistry {
    return new OwnershipRegistry(path.join(dataDir, 'hands', hostId, 'owners.json'));
  }

  private read(): Record<string, OwnerEntry> {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    const parsed = FileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`sandbox registry ${this.file} is malformed: ${parsed.error.message}`);
    return parsed.data;
  }

  /** Writes a new file and renames it over the old, so a crash leaves one or the other whole. */
  private write(all: Record<string, OwnerEntry>): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(all));
    fs.renameSync(tmp, this.file);
  }

  get(sandboxId: string): OwnerEntry | undefined {
    return this.read()[sandboxId];
  }

  /** Records the session a new sandbox belongs to; an existing entry for another session is left alone. */
  claim(sandboxId: string, owner: string, name: string): OwnerEntry {
    const all = this.read();
    const current = all[sandboxId];
    if (current && current.owner !== owner) throw new OwnershipError(deniedMessage(sandboxId, current.owner, owner));
    if (!current) {
      all[sandboxId] = { owner, name, since: Date.now() };
      this.write(all);
    }
    return all[sandboxId];
  }

  /** Moves a sandbox from `from` to `to`. Repeating a transfer that already happened is a no-op. */
  transfer(sandboxId: string, from: string, to: string, name: string): OwnerEntry {
    const all = this.read();
    const current = all[sandboxId];
    if (current?.owner === to) return current;
    if (current && current.owner !== from) throw new OwnershipError(deniedMessage(sandboxId, current.owner, from));
    all[sandboxId] = { owner: to, name: current?.name ?? name, since: Date.now() };
    this.write(all);
    return all[sandboxId];
  }

  remove(sandboxId: string): void {
    const all = this.read();
    if (!(sandboxId in all)) return;
    delete all[sandboxId];
    this.write(all);
  }
}

export function deniedMessage(sandboxId: string, owner: string, caller: string): string {
  return `sandbox ${sandboxId.slice(0, 12)} now belongs to session ${owner}; session ${caller} may no longer use it`;
}
