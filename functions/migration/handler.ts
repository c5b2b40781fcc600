import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createMigrationApp } from './app.js';
import { migrationDeps } from './compose.js';

export const handler = handle(createMigrationApp(migrationDeps(lambdaRuntimeFromEnv())));
