// Jest's summary, then one plain line, `Tests: N passed, N failed, N skipped`, as the run's last: the closing line
// that CI reads whatever the test runner. It goes to standard output, where test runners print their closing lines
// and a log reader looks for them (Jest writes all of its own output to standard error). A suite that failed to run counts as a failed test, so the line never
// reads clean when Jest's exit code does not. It takes the place of Jest's own summary reporter, which Jest would
// otherwise add after every configured one.
const { SummaryReporter } = require('@jest/reporters');

class ClosingLineReporter extends SummaryReporter {
  onRunComplete(testContexts, results) {
    super.onRunComplete(testContexts, results);
    // A run that failed with no test failing (a run error, an interruption, a failed suite) still reads as failed.
    // (`results.success` is set only after the reporters have run.)
    const broken = results.runExecError || results.wasInterrupted || results.numFailedTestSuites > 0;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites || (broken ? 1 : 0);
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`Tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
module.exports = ClosingLineReporter;
