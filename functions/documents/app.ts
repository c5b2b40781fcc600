import { createServiceApp, type ServiceApp } from '../../shared/http/app.js';
import type { Runtime } from '../../shared/runtime.js';

/** The composition root used by the Lambda handler and the local platform. */
export function documentsApp(runtime: Runtime): ServiceApp {
  return createServiceApp(runtime.authenticator);
}
