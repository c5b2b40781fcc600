import { defineConfig } from 'vitest/config';

/**
 * Integration files that run alone, one after the other once the rest have finished: each
 * says why at its top. Every other integration file runs beside others, one per worker, each
 * worker on a platform of its own (test/integration/global-setup.ts).
 */
export const ALONE = [
  // Dependencies made unreachable one at a time, a 10 s answer bound timed per request: the
  // only file whose outcome depends on the machine's load.
  'test/integration/suites/outage.test.ts',
  // A platform of its own whose exact DynamoDB calls are counted, with the periodic re-reads
  // of the event pipeline held off for the count's window.
  'test/integration/suites/call-counts.test.ts',
];

/**
 * Workers for the files that run side by side (unit and integration): measured on a 2-core
 * machine (test/README.md), more than the cores because integration files mostly wait on
 * their platform. TEST_WORKERS overrides it.
 */
const WORKERS = Number(process.env.TEST_WORKERS) || 3;

/**
 * The JVM of each DynamoDB Local a test starts for itself (the `npm start` of the local
 * suites, emulators of a file's own) lives seconds to a minute: the client compiler only and
 * the serial collector halve the CPU its start takes (measured: 10.7 → 5.3 s of CPU, ready
 * in 6–11 s instead of 23 s on a loaded 2-core machine). The run's shared DynamoDB Local,
 * started by the setup in the main process, keeps the JVM's defaults.
 */
const SHORT_LIVED_JVM = { JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC' };

export default defineConfig({
  test: {
    // The JSON report is what .ci/run reads for its "N passed, M failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest/results.json' },
    maxWorkers: WORKERS,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 60_000,
          // systemClock sleeps through node:timers/promises: vi.useFakeTimers fakes its sleeps too.
          fakeTimers: { fakeNodeBuiltins: true },
        },
      },
      {
        test: {
          // The synthesized stacks. Not isolated: a worker keeps aws-cdk-lib and the template
          // validator it loads on the first synthesis (~10 s of WebAssembly set-up) for the
          // next files it runs; each file still synthesizes its own stacks.
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          isolate: false,
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: ALONE,
          env: SHORT_LIVED_JVM,
          // A worker runs its files one after the other in one process, against its one
          // platform: the service's modules are loaded once per worker, not once per file.
          isolate: false,
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // The files of ALONE, one at a time after the groups before (groups run from the
          // lowest groupOrder up), on the platform of worker slot 1.
          name: 'integration-alone',
          include: ALONE,
          env: SHORT_LIVED_JVM,
          globalSetup: ['test/integration/global-setup.ts'],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // Reads what the integration run recorded (its exchanges and the service log),
          // so it runs after the other projects.
          name: 'hygiene',
          include: ['test/hygiene/**/*.test.ts'],
          sequence: { groupOrder: 2 },
          testTimeout: 60_000,
        },
      },
    ],
  },
});
