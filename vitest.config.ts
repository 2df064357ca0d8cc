import { defineConfig } from 'vitest/config';

// MD_TEST_REPORT=file.json adds vitest's JSON report (per-file and per-test
// times): .ci/run sets it and prints where the time went.
const report = process.env.MD_TEST_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each bound is at least 3x the longest its test or hook took on a
    // 2-core machine with both cores also busy (README, "Testing under
    // load"); slower tests set their own.
    testTimeout: 120_000,
    // Hooks load models with 150,000-token vocabularies: never vitest's 10 s.
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: report ? ['default', ['json', { outputFile: report }]] : ['default'],
  },
});
