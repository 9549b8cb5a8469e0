// Jest's per-file reporter as its `default` picks it (the verbose one under --verbose, or when one file runs), named by
// path so that Jest adds no summary reporter of its own after closing-line-reporter.js.
const { DefaultReporter, VerboseReporter } = require('@jest/reporters');

function ProgressReporter(globalConfig) {
  return globalConfig.verbose ? new VerboseReporter(globalConfig) : new DefaultReporter(globalConfig);
}
module.exports = ProgressReporter;
