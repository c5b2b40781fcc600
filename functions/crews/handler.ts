import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createCrewsApp } from './app.js';
import { crewsDeps } from './compose-api.js';

export const handler = handle(createCrewsApp(crewsDeps(lambdaRuntimeFromEnv())));
