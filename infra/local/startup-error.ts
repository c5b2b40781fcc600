/** A start-up problem an operator fixes by hand: printed as one line, no stack trace. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
