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
  // Jest's progress and summary, then one plain `Tests: N passed, N failed, N skipped` line that CI reads as the
  // run's end.
  reporters: ['<rootDir>/test/helpers/progress-reporter.js', '<rootDir>/test/helpers/closing-line-reporter.js'],
  projects: [
    { ...base, displayName: 'fast', testMatch: ['<rootDir>/test/**/*.test.ts'], testPathIgnorePatterns: ['\\.slow\\.test\\.ts$'] },
    { ...base, displayName: 'slow', testMatch: ['<rootDir>/test/**/*.slow.test.ts'] },
  ],
};
