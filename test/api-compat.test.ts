// docs/api.md's compatibility table is generated from the SDK's methods and the server's routes
// (scripts/api-compat.ts) and must match them: run `npm run docs:reference` after changing either.
import fs from 'node:fs';
import { API_DOC, apiDocWithTable, classify, serverRoutes } from '../scripts/api-compat';
import { ensureContract } from '../scripts/sdk-contract';

it('docs/api.md carries the compatibility table the SDK and the server generate', async () => {
  expect(fs.readFileSync(API_DOC, 'utf8')).toBe(await apiDocWithTable());
});

it('accounts for every SDK method: served and checked by a suite, refused with a 400 and why, not served, or run in the SDK', async () => {
  const { contract } = ensureContract();
  const rows = classify(contract, await serverRoutes());
  expect(rows.map((r) => r.method.name)).toEqual(contract.methods.map((m) => m.name));
  expect(rows.length).toBeGreaterThan(250);
  const served = rows.filter((r) => r.status.kind === 'served');
  expect(served.map((r) => r.method.name)).toEqual(
    expect.arrayContaining(['beta.agents.create', 'beta.sessions.events.stream', 'beta.vaults.credentials.list']),
  );
  for (const r of served)
    expect({ method: r.method.name, suites: r.status.kind === 'served' && r.status.suites.length > 0 }).toEqual({
      method: r.method.name,
      suites: true,
    });
  const refused = rows.filter((r) => r.status.kind === 'refused').map((r) => r.method.name);
  expect(refused).toEqual(expect.arrayContaining(['beta.vaults.credentials.mcpOAuthValidate']));
  expect(fs.readFileSync(API_DOC, 'utf8')).not.toMatch(/accepted and ignored\s*\|/);
});
