// Two projects: `fast` is `npm test`, `slow` holds the long suites run by `npm run test:slow`.
const base = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  // Transpiled file by file (tsconfig.jest.json sets isolatedModules): the types of src/ and test/ are checked once
  // by `npm run typecheck`, which CI runs before the suites, rather than again in every Jest worker.
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] },
  setupFiles: ['<rootDir>/test/setup-env.ts'],
};
module.exports = {
  testTimeout: 120_000,
  // Two suites at a time, also on 2 cores (where Jest's default is one): a suite spends much of its time waiting
  // on containers, servers and child workers, and each has its own dev server, ports, host id and sessions.
  maxWorkers: 2,
  projects: [
    { ...base, displayName: 'fast', testMatch: ['<rootDir>/test/**/*.test.ts'], testPathIgnorePatterns: ['\\.slow\\.test\\.ts$'] },
    { ...base, displayName: 'slow', testMatch: ['<rootDir>/test/**/*.slow.test.ts'] },
  ],
};
