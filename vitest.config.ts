import { defineConfig } from 'vitest/config';

// MD_TEST_REPORT=file.json adds vitest's JSON report (per-file and per-test
// times): .ci/run sets it and prints where the time went.
const report = process.env.MD_TEST_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A bound catches a hang; it must never catch a slow machine. The
    // slowest tests took up to 60 s on a 2-core machine with both cores
    // busy beside the suite (README, "The tests on a busy machine"): 300 s
    // is 5x that. The package install test sets its own, longer bound.
    testTimeout: 300_000,
    // Hooks load models with 150,000-token vocabularies: never vitest's 10 s.
    hookTimeout: 300_000,
    pool: 'forks',
    // Each file's dispatched kernels are recorded for the coverage check
    // npm test runs after the suite (scripts/check-kernel-coverage.mjs).
    globalSetup: ['test/setup/kernel-usage-reset.ts'],
    setupFiles: ['test/setup/kernel-usage.ts'],
    reporters: report ? ['default', ['json', { outputFile: report }]] : ['default'],
  },
});
