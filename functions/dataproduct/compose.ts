import type { Runtime } from '../composition.js';
import type { DataproductDeps } from './app.js';
import { KeyService } from './service.js';

export function dataproductDeps(runtime: Runtime): DataproductDeps {
  return { authenticator: runtime.authenticator, service: new KeyService(runtime.keys, runtime.psk) };
}
