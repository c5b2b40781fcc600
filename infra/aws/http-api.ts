import { Duration, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  LogGroupLogDestination,
  type CfnStage,
  type HttpStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { MathExpression, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { CORS } from '../../shared/cors.js';
import { EXPENSIVE_ROUTES, groupForPath, type GroupDefinition } from '../groups.js';
import { ALARM_PERIOD, stageAlarm } from './alarms.js';
import { constructId, type ServiceFunction } from './service-function.js';
import type { Stage } from './stages.js';

/** The stage's HTTP API and its one stage (`$default`), whose `url` the stack outputs. */
export interface ServiceHttpApi {
  readonly api: HttpApi;
  readonly apiStage: HttpStage;
}

/**
 * The stage's HTTP API: each group's routes to its function, the expensive routes throttled
 * tighter, CORS, the access logs and the 5xx-rate alarm. Built straight into `scope` (the
 * stack), not into a construct of its own: a construct between them would change every API
 * resource's logical id, and CloudFormation would replace the API and its URL.
 */
export function serviceHttpApi(
  scope: Construct,
  stage: Stage,
  groups: readonly GroupDefinition[],
  functions: ReadonlyMap<string, ServiceFunction>,
): ServiceHttpApi {
  const integrations = new Map(
    groups.map((group) => [
      group.name,
      new HttpLambdaIntegration(`${constructId(group.name)}Integration`, functions.get(group.name)!.lambda),
    ]),
  );
  const fallback = groups.filter((group) => group.servesUnknownPaths);
  if (fallback.length !== 1) {
    throw new Error(`exactly one group serves unknown paths (servesUnknownPaths), not ${fallback.length}`);
  }

  const accessLogs = new LogGroup(scope, 'ApiAccessLogs', {
    logGroupName: `/aws/apigateway/dpm-${stage.name}`,
    retention: stage.logRetentionDays,
    removalPolicy: stage.removalPolicy,
  });
  // Checked with the rest of the stage by assertDeployable.
  const corsOrigins = stage.corsOrigins ?? [];
  const api = new HttpApi(scope, 'Api', {
    apiName: `dpm-${stage.name}`,
    // `$default`: unknown paths get the service's JSON 404 rather than API Gateway's.
    defaultIntegration: integrations.get(fallback[0]!.name),
    createDefaultStage: false,
    // The same rules as the local platform (shared/cors.ts); none without origins.
    ...(corsOrigins.length > 0 && {
      corsPreflight: {
        allowOrigins: [...corsOrigins],
        allowMethods: CORS.allowMethods.map((m) => CorsHttpMethod[m]),
        allowHeaders: [...CORS.allowHeaders],
        exposeHeaders: [...CORS.exposeHeaders],
        maxAge: Duration.seconds(CORS.maxAgeSeconds),
      },
    }),
  });
  // API Gateway authorizes nothing: every route's Lambda authenticates the caller itself (docs/identity-and-keys.md:
  // a pre-shared key or a Bearer token, and public routes such as ping and the docs), since an
  // HTTP API's JWT authorizer can check neither the keys nor the mix; anonymous floods meet the throttle.
  Validations.of(api).acknowledge({
    id: 'AwsSolutions-APIG4',
    reason:
      'authentication inside the functions (pre-shared keys and Bearer tokens, public ping and ' +
      'docs), which no API Gateway authorizer can do; the stage throttle bounds anonymous requests',
  });
  // Declared by hand because only an explicit stage takes access-log settings.
  const apiStage = api.addStage('DefaultStage', {
    stageName: '$default',
    autoDeploy: true,
    // Every route; anonymous floods are refused here, before any Lambda runs.
    throttle: stage.apiThrottle,
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      format: AccessLogFormat.custom(
        JSON.stringify({
          requestId: '$context.requestId',
          ip: '$context.identity.sourceIp',
          requestTime: '$context.requestTime',
          method: '$context.httpMethod',
          routeKey: '$context.routeKey',
          path: '$context.path',
          status: '$context.status',
          responseLength: '$context.responseLength',
          // The whole answer's time, and the function's part of it.
          responseLatency: '$context.responseLatency',
          integrationLatency: '$context.integrationLatency',
          integrationStatus: '$context.integrationStatus',
          // API Gateway's own refusals (throttled, no route) and the integration's failures.
          errorMessage: '$context.error.message',
          integrationError: '$context.integrationErrorMessage',
          userAgent: '$context.identity.userAgent',
          protocol: '$context.protocol',
        }),
      ),
    },
  });

  for (const group of groups) {
    const integration = integrations.get(group.name)!;
    for (const prefix of group.prefixes) {
      api.addRoutes({ path: prefix, methods: [HttpMethod.ANY], integration });
      api.addRoutes({ path: `${prefix}/{proxy+}`, methods: [HttpMethod.ANY], integration });
    }
    for (const path of group.exactPaths ?? []) {
      api.addRoutes({ path, methods: [HttpMethod.GET], integration });
    }
  }
  // The expensive routes: routes of their own (to their group's function) with a tighter throttle.
  // CloudFormation's RouteSettings is a map of route key → settings, as written here.
  const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
  for (const route of EXPENSIVE_ROUTES) {
    const group = groupForPath(route.path);
    if (!group) throw new Error(`no group serves ${route.path}`);
    api.addRoutes({
      path: route.path,
      methods: [HttpMethod[route.method]],
      integration: integrations.get(group.name)!,
    });
    routeSettings[`${route.method} ${route.path}`] = {
      ThrottlingRateLimit: stage.expensiveRouteThrottle.rateLimit,
      ThrottlingBurstLimit: stage.expensiveRouteThrottle.burstLimit,
    };
  }
  (apiStage.node.defaultChild as CfnStage).routeSettings = routeSettings;

  // The API's 5xx answers as a share of its requests.
  stageAlarm(scope, 'ServerErrorRateAlarm', stage, {
    name: 'api-5xx-rate',
    description: `More than ${stage.serverErrorAlarmPercent}% of the API's answers are 5xx`,
    metric: new MathExpression({
      label: '5xx %',
      expression: 'IF(requests > 0, 100 * errors / requests, 0)',
      usingMetrics: {
        errors: api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        requests: api.metricCount({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      },
      period: ALARM_PERIOD,
    }),
    threshold: stage.serverErrorAlarmPercent,
  });
  return { api, apiStage };
}
