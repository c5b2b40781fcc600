/** Writes functions/platform/openapi.json, which the platform Lambda serves (`npm run openapi`). */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../shared/config.js';
import { createRuntime } from '../composition.js';
import { openApiDocument, serviceApps } from '../apps.js';

export function generatedDocument() {
  return openApiDocument(Object.values(serviceApps(createRuntime(loadConfig({})))));
}

export const OPENAPI_FILE = fileURLToPath(new URL('./openapi.json', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_FILE, `${JSON.stringify(generatedDocument(), null, 2)}\n`);
  console.log(`wrote ${OPENAPI_FILE}`);
}
