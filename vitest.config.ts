import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The JSON report is what .ci/run reads for its "N passed, M failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest/results.json' },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
