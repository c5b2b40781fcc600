import { type Runtime, secrets } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { CrewsDeps } from './app.js';
import { crewServices, scheduleService } from './compose.js';

/*
 * The crews API's deps (its Lambda and the local platform), apart from compose.ts, whose
 * builders the run worker and the dead-letter Lambda use: those carry none of its idempotency keys.
 */

export function crewsDeps(runtime: Runtime): CrewsDeps {
  const services = crewServices(runtime);
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime, secrets(runtime)),
    ...services,
    schedules: scheduleService(runtime, services.runs),
  };
}
