// Jest's default reporter (each file's result as it ends), named by path so that Jest adds no summary reporter of
// its own after closing-line-reporter.js.
module.exports = require('@jest/reporters').DefaultReporter;
