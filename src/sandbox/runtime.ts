// Which OCI runtime a sandbox runs under: gVisor's runsc wherever the engine offers it, runc otherwise, with
// the fallback recorded as a loosening. gVisor enforces memory and pids limits on the sandbox as a whole from
// the host (its own processes count), so those get headroom for gVisor's own threads and memory.
import type Docker from 'dockerode';
import { z } from 'zod';
import type { SandboxRecipe } from '../session/agent';
import { PlatformError } from '../session/platform-error';

/** `auto`: runsc when the engine has it, else runc (loosened). `runsc`: required. `runc`: chosen (loosened). */
export const SandboxRuntimePreferenceSchema = z.enum(['auto', 'runsc', 'runc'], {
  error: 'must be auto, runsc or runc',
});
export type SandboxRuntimePreference = z.infer<typeof SandboxRuntimePreferenceSchema>;

/** The loosening recorded when a sandbox runs on the host's kernel. */
export const RUNC_LOOSENING = 'runtime:runc';

export interface RuntimeChoice {
  /** The Docker runtime name, e.g. `runsc-nonet`. */
  name: string;
  /** What runs the sandbox: `runsc` or `runc`. */
  kind: 'runsc' | 'runc';
  loosened: string[];
}

/** Each sandboxed process costs gVisor about two host tasks (a stub and its thread); the sentry needs some. */
const RUNSC_PIDS = (pids: number) => 2 * pids + 64;
/** The sentry and gofer live in the sandbox's memory cgroup. */
const RUNSC_MEMORY_HEADROOM_MB = 64;

export class RuntimeUnavailableError extends PlatformError {}

export class RuntimeSelector {
  private cached?: { at: number; names: Promise<string[]> };

  constructor(
    private readonly docker: Docker,
    private readonly preference: SandboxRuntimePreference = 'auto',
    /** A runsc runtime name to use instead of `runsc` / `runsc-nonet` (the benchmarks' gVisor variants). */
    private readonly runscName?: string,
  ) {}

  private runtimes(): Promise<string[]> {
    // A SIGHUP can add runtimes to a running engine: look again now and then.
    if (!this.cached || Date.now() - this.cached.at > 60_000) {
      const names = this.docker
        .info()
        .then((info: { Runtimes?: Record<string, unknown> }) => Object.keys(info.Runtimes ?? {}));
      names.catch(() => (this.cached = undefined));
      this.cached = { at: Date.now(), names };
    }
    return this.cached.names;
  }

  async choose(recipe: SandboxRecipe): Promise<RuntimeChoice> {
    const runc: RuntimeChoice = { name: 'runc', kind: 'runc', loosened: [RUNC_LOOSENING] };
    if (this.preference === 'runc') return runc;
    const names = await this.runtimes();
    const wanted = this.runscName ?? (recipe.network === 'none' ? 'runsc-nonet' : 'runsc');
    if (names.includes(wanted)) return { name: wanted, kind: 'runsc', loosened: [] };
    if (this.preference === 'runsc')
      throw new RuntimeUnavailableError(
        `SANDBOX_RUNTIME=runsc, but the Docker engine has no ${wanted} runtime (it has ${names.join(', ')}); run \`npm run setup\``,
      );
    return runc;
  }
}

/** What a runtime name recorded on a container means, for a sandbox found again (resumed or reused). */
export function runtimeOf(name: string | undefined): RuntimeChoice {
  if (name?.startsWith('runsc')) return { name, kind: 'runsc', loosened: [] };
  return { name: name || 'runc', kind: 'runc', loosened: [RUNC_LOOSENING] };
}

/** The host-side limits for a recipe under a runtime. */
export function hostLimits(recipe: SandboxRecipe, kind: RuntimeChoice['kind']): { pids: number; memoryBytes: number } {
  const mb = kind === 'runsc' ? recipe.resources.memoryMb + RUNSC_MEMORY_HEADROOM_MB : recipe.resources.memoryMb;
  return {
    pids: kind === 'runsc' ? RUNSC_PIDS(recipe.resources.pidsLimit) : recipe.resources.pidsLimit,
    memoryBytes: mb * 1024 * 1024,
  };
}
