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
      {
        test: {
          // Reads what the integration run recorded (its exchanges and the service log),
          // so it runs after the other projects: groups run from the lowest groupOrder up.
          name: 'hygiene',
          include: ['test/hygiene/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
        },
      },
    ],
  },
});
