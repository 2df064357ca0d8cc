// Where the vitest suite's time went: the slowest test files, the slowest
// tests, and the total, from the JSON report vitest writes when
// MD_TEST_REPORT names a file (vitest.config.ts). .ci/run prints it at its end.
//   node scripts/test-times.mjs report.json [count]
import { readFileSync } from 'node:fs';

const [path, countArg] = process.argv.slice(2);
if (!path) {
  console.error('usage: node scripts/test-times.mjs <vitest JSON report> [count]');
  process.exit(2);
}
const count = Number(countArg ?? 10);
let report;
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (error) {
  console.log(`test-times: no vitest report at ${path} (${error.message}): the suite did not get as far as writing it`);
  process.exit(0);
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
const relative = (name) => name.slice(name.lastIndexOf('/test/') + 1);
const files = report.testResults.map((file) => ({
  name: relative(file.name),
  ms: file.endTime - file.startTime,
  tests: file.assertionResults,
}));
const tests = files.flatMap((file) => file.tests.map((test) => ({ name: `${file.name} > ${test.fullName}`, ms: test.duration ?? 0 })));

console.log(`The ${count} slowest test files (of ${files.length}):`);
for (const file of [...files].sort((a, b) => b.ms - a.ms).slice(0, count))
  console.log(`${seconds(file.ms)}  ${file.name} (${file.tests.length} tests)`);
console.log(`The ${count} slowest tests (of ${tests.length}):`);
for (const test of [...tests].sort((a, b) => b.ms - a.ms).slice(0, count)) console.log(`${seconds(test.ms)}  ${test.name.slice(0, 160)}`);
const ends = report.testResults.map((file) => file.endTime);
const total = ends.length ? Math.max(...ends) - report.startTime : 0;
console.log(
  `vitest: ${report.numPassedTests} passed, ${report.numFailedTests} failed of ${report.numTotalTests}; ` +
    `${seconds(total).trim()} from start to the last file's end; the files' times add up to ${seconds(files.reduce((s, f) => s + f.ms, 0)).trim()}`,
);
