// The help text the `agents` commands add to commander's: worked examples, and the program's notes on output.
import type { Command } from 'commander';

/** Worked examples shown after each command's --help, by command path. */
const EXAMPLES: Record<string, string[]> = {
  start: [
    'agents start "Summarise README.md"',
    'agents start --agent coder.yaml --json "Fix the failing test" | jq -r .sessionId',
    'agents start --wait "What is 2+2?"   # streams the first turn on stderr',
  ],
  send: ['agents send ses-1234 "Now run the tests"', 'agents send ses-1234 "retry-safe" --message-id req-42 --json'],
  events: [
    'agents events ses-1234',
    'agents events ses-1234 --from 100 --limit 20 --json',
    'agents events ses-1234 --follow',
  ],
  watch: [
    'agents watch ses-1234',
    "agents watch ses-1234 --json | jq -c 'select(.seq != null)'   # events only",
    'agents watch ses-1234 --no-stream',
    'AGENTS_API_URL=http://127.0.0.1:8480 AGENTS_API_KEY_FILE=.data/api-key agents watch sesn_01AB…   # previews relayed by the API',
  ],
  status: [
    'agents status ses-1234',
    'agents status ses-1234 --json | jq .usage',
    'agents status ses-1234 --json | jq ".threads, .listCost"',
  ],
  list: ['agents list', 'agents list --limit 10 --json'],
  wake: ['agents wake ses-1234', 'agents wake ses-1234 --json'],
  fork: [
    'agents fork ses-1234 --at 41 "Try another approach"',
    'agents fork ses-1234 --at 41 --sandboxes --id ses-1234-b --json',
  ],
  interrupt: ['agents interrupt ses-1234 --reason "wrong direction"'],
  end: ['agents end ses-1234', 'agents end ses-1234 --reason done --json'],
  approve: [
    'agents approve ses-1234 toolu_01A',
    'agents approve ses-1234 toolu_01A --by alice --reason "reviewed the diff" --json',
  ],
  deny: [
    'agents deny ses-1234 toolu_01A --reason "no force pushes"',
    'agents deny ses-1234 toolu_01A --by alice --reason "wrong branch" --json',
  ],
  submit: [
    'agents submit ses-1234 toolu_01B --output "teal"',
    'my-form | agents submit ses-1234 toolu_01B --output-file - --json',
    'agents submit ses-1234 toolu_01B --output "form closed" --error',
  ],
  handoff: ['agents handoff ses-1234 main ses-5678', 'agents handoff ses-1234 builder ses-5678 --json'],
  worker: [
    'agents worker --role brain',
    'agents worker --role brain --task-queue agents-research   # sub-agents with taskQueue: agents-research',
    'HANDS_HOST_ID=gpu-1 agents worker --role hands',
    'STREAM_LISTEN=0.0.0.0:7400 agents worker --role brain --json',
  ],
  'files put': [
    'agents files put ses-1234 ./data.csv data/input.csv',
    'agents files put ses-1234 --sandbox builder ./Makefile Makefile --json',
  ],
  'files get': ['agents files get ses-1234 report.md ./report.md'],
  'files list': ['agents files list', 'agents files list --session sesn_01AB… --limit 20 --json'],
  'files upload': [
    'agents files upload ./data.csv',
    'agents files upload ./data.csv --workspace team-a --expires-in 86400 --json | jq -r .id',
  ],
  'files info': ['agents files info file_01AB…', 'agents files info file_01AB… --json'],
  'files download': ['agents files download file_01AB… -o ./report.md', 'agents files download file_01AB… > report.md'],
  'files delete': ['agents files delete file_01AB…', 'agents files delete file_01AB… --json'],
  'vault put': [
    'printf %s "$GITHUB_TOKEN" | agents vault put git-token',
    'agents vault put tracker-oauth --vault team-a < oauth.json',
  ],
  'vault list': ['agents vault list', 'agents vault list --vault team-a --json'],
  'vault rm': ['agents vault rm git-token'],
  dev: ['agents dev', 'agents dev --json   # {"address","uiUrl",...} once up'],
  'model-server': [
    'agents model-server --port 8787',
    'ANTHROPIC_BASE_URL=$(agents model-server --json | jq -r .url) ...',
  ],
  doctor: ['agents doctor', 'agents doctor --json | jq .'],
  api: ['agents api', 'API_LISTEN=0.0.0.0:8480 DATABASE_URL=postgres://... agents api --json'],
  'api-keys create': [
    'agents api-keys create --workspace team-a',
    'KEY=$(agents api-keys create --workspace team-a --json | jq -r .key)',
  ],
  'api-keys list': ['agents api-keys list', 'agents api-keys list --json'],
  'api-keys revoke': ['agents api-keys revoke apikey_01AB…'],
  'environment-keys create': [
    'agents environment-keys create --environment env_01AB…',
    'KEY=$(agents environment-keys create --environment env_01AB… --json | jq -r .key)',
  ],
  'environment-keys list': [
    'agents environment-keys list',
    'agents environment-keys list --environment env_01AB… --json',
  ],
  'environment-keys revoke': ['agents environment-keys revoke envkey_01AB…'],
  'memory stores': ['agents memory stores', 'agents memory stores --workspace team-a --json'],
  'memory ls': ['agents memory ls memstore_01AB…', 'agents memory ls memstore_01AB… --prefix /notes/ --json'],
  'memory cat': ['agents memory cat memstore_01AB… /notes/todo.md'],
  'memory versions': ['agents memory versions memstore_01AB… --path /notes/todo.md'],
  'deployments list': ['agents deployments list', 'agents deployments list --include-archived --json'],
  'deployments show': ['agents deployments show depl_01AB…', 'agents deployments show depl_01AB… --json'],
  'deployments pause': ['agents deployments pause depl_01AB…'],
  'deployments unpause': ['agents deployments unpause depl_01AB… --json'],
  'deployments run': [
    'agents deployments run depl_01AB…',
    'agents deployments run depl_01AB… --json | jq -r .session_id',
  ],
  'deployments runs': ['agents deployments runs depl_01AB…', 'agents deployments runs depl_01AB… --limit 10 --json'],
  'webhooks add': [
    'agents webhooks add https://hooks.example.com/agents --workspace team-a',
    'agents webhooks add https://hooks.example.com/agents --workspace team-a --events session.status_idled,session.status_terminated --json',
  ],
  'webhooks list': ['agents webhooks list', 'agents webhooks list --workspace team-a --json'],
  'webhooks remove': ['agents webhooks remove whep_01AB…'],
  'webhooks rotate-secret': [
    'agents webhooks rotate-secret whep_01AB…',
    'agents webhooks rotate-secret whep_01AB… --json',
  ],
  'webhooks enable': ['agents webhooks enable whep_01AB…'],
  'webhooks disable': ['agents webhooks disable whep_01AB… --reason "receiver moving"'],
  'webhooks deliveries': [
    'agents webhooks deliveries whep_01AB…',
    'agents webhooks deliveries whep_01AB… --limit 20 --json',
  ],
  audit: ['agents audit', 'agents audit --workspace team-a --limit 20 --json'],
  'vault public-key': ['VAULT_PUBLIC_KEY=$(agents vault public-key) agents api'],
  'codec-server': [
    'agents codec-server',
    'CODEC_SERVER_TOKEN=s3cret agents codec-server --port 8234 --origin https://ui.example',
  ],
};

/** The program's own --help ends with how output works and a first session. */
export const PROGRAM_HELP = `
Output: --json on every command prints machine output on stdout and nothing else there; progress, notes
and logs go to stderr. Colour is used only on a terminal, and never with NO_COLOR set.

Examples:
  $ agents dev                                  # local server, model and workers; Ctrl-C stops them
  $ id=$(agents start "Run \`npm test\` and explain failures")
  $ agents watch "$id"                          # model tokens and tool output as they are produced
  $ agents send "$id" "Fix the first one" && agents status "$id"
`;

/** Adds each command's examples to its --help. */
export function addExamples(cmd: Command, prefix = ''): void {
  for (const sub of cmd.commands) {
    const name = `${prefix}${sub.name()}`;
    const lines = EXAMPLES[name];
    if (lines) sub.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
    addExamples(sub, `${name} `);
  }
}
