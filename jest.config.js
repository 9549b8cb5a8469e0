// Two projects: `fast` is `npm test`, `slow` holds the long suites run by `npm run test:slow`.
const base = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: { warnOnly: false } }] },
};
module.exports = {
  testTimeout: 120_000,
  projects: [
    { ...base, displayName: 'fast', testMatch: ['<rootDir>/test/**/*.test.ts'], testPathIgnorePatterns: ['\\.slow\\.test\\.ts$'] },
    { ...base, displayName: 'slow', testMatch: ['<rootDir>/test/**/*.slow.test.ts'] },
  ],
};
